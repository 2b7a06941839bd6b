"""Bearer tokens and roles (SPEC §9): who may post, who may read, who may administer."""

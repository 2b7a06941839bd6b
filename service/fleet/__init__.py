"""Fleet health: component states, their history, replacements, and the fleet's statistics."""

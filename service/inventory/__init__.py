"""Hosts' tool outputs posted by agents (`POST /v1/inventory`), turned into topology versions."""

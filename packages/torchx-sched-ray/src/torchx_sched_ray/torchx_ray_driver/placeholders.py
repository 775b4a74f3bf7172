"""Placeholders the scheduler leaves in a replica's argv and env for what only the cluster knows.

NUL cannot occur in argv or env, so a placeholder never collides with the app's own words;
the driver replaces each verbatim and interprets nothing else.
"""

REPLICA_ID = "\0replica_id\0"
IMG_ROOT = "\0img_root\0"
RANK0_HOST = "\0rank0_host\0"

"""Small helpers shared by the core modules."""

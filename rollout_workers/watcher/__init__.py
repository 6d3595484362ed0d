"""The watcher: one Reflector per watched type mirrors the API into the Redis cache, and every
change is mapped to the keys of the objects that must be reconciled because of it."""

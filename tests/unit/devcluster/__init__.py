"""Pure-logic tests of the devcluster (selectors, patches, store, controller helpers)."""

"""Host memory pools for hierarchical caching, one module per device-pool kind."""

"""Settings: the `Cellwright` configurable, the settings a run reads, and what PUT config saved."""

"""The agent loop and what a run is made of: the graph, its driver, approvals, context and usage."""

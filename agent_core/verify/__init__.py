"""verify_notebook (issue 26): re-run a saved notebook in a fresh shadow kernel and say whether it
reproduces what the agent's thread recorded, and what hidden state it depends on."""

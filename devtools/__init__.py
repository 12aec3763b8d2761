"""What the tests and the benchmarks share, and the wheel does not ship: the scripted
OpenAI-compatible model server, a real Jupyter server in a subprocess, and the SSE parser."""

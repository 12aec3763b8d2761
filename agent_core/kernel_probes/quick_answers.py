"""The kernel's quick answer to the server's read-only probes (issue 41). Shipped to the kernel as a
probe (agent_core.kernel_probes.probe): this file's source is exec'd into a private module there, so
it imports nothing but the standard library and works in any IPython kernel, a gateway's too.

A silent execute_request costs an IPython kernel ~2.5 ms before it evaluates anything: IPython runs
the empty cell (transformers, compile, the pre/post_execute events), ipykernel flushes the output
streams and sleeps 0.5 ms before it replies, and every user_expression's value goes through all of
IPython's display formatters. `install` wraps the kernel's execute_request handler so that a request
of the server's probes only (empty code, silent, every user_expressions key starting with QUICK_PREFIX:
expressions that run none of the user's code) is answered at once: each expression evaluated as
IPython's user_expressions would (same globals, same reply), compiled once, a string's text/plain its
repr (what IPython's formatter gives a str). Any other request goes to the original handler, as does
everything when this is not an ipykernel (install then says why and changes nothing). A restarted
kernel has the original handler: the server's next request installs this again."""

# mypy: disable-error-code="no-untyped-def,no-untyped-call,type-arg,var-annotated,attr-defined,index"
# No `from __future__ import`: the probe prepends its helpers to this source, and it would no longer come first.
import json
import sys

QUICK_PREFIX = "cellwright_quick_"
INSTALL_KEY = QUICK_PREFIX + "install"
_COMPILED_LIMIT = 64  # expressions kept compiled (a probe's payload makes each call's text its own)
_INSTALLED = {"status": "ok", "data": {"text/plain": repr(json.dumps({"installed": True}))}, "metadata": {}}


def install(ns, payload):
    """Wrap the kernel's execute_request handler (once per kernel process and version of this source)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    kernel = getattr(shell, "kernel", None)
    handlers = getattr(kernel, "shell_handlers", None)
    if type(handlers) is not dict or "execute_request" not in handlers:
        return json.dumps({"installed": False, "reason": "not an ipykernel kernel"})
    version = json.loads(payload)["version"]
    current = handlers["execute_request"]
    if getattr(current, "_cellwright_quick", None) == version:
        return json.dumps({"installed": True})
    handlers["execute_request"] = _wrapped(getattr(current, "_cellwright_original", current), shell, kernel, version)
    return json.dumps({"installed": True})


def _wrapped(original, shell, kernel, version):
    compiled = {}

    def execute_request(stream, ident, parent):
        content = parent.get("content") if type(parent) is dict else None
        if not _quick(content):
            return original(stream, ident, parent)
        results = {}
        for key, expression in content["user_expressions"].items():
            results[key] = _INSTALLED if key == INSTALL_KEY else _evaluate(shell, compiled, expression)
        # No flush of sys.stdout/err before the reply, as ipykernel does for a cell's: a read-only
        # expression prints nothing, and each flush is a round trip to the kernel's IO thread.
        reply = {"status": "ok", "execution_count": shell.execution_count, "user_expressions": results, "payload": []}
        metadata = kernel.finish_metadata(parent, kernel.init_metadata(parent), reply)
        kernel.session.send(stream, "execute_reply", reply, parent, metadata=metadata, ident=ident)
        return None

    execute_request._cellwright_quick = version
    execute_request._cellwright_original = original
    return execute_request


def _quick(content):
    if type(content) is not dict or content.get("code") != "" or content.get("silent") is not True:
        return False
    expressions = content.get("user_expressions")
    return (
        type(expressions) is dict
        and len(expressions) > 0
        and all(type(k) is str and k.startswith(QUICK_PREFIX) and type(v) is str for k, v in expressions.items())
    )


def _evaluate(shell, compiled, expression):
    """What IPython's InteractiveShell.user_expressions answers for `expression`."""
    try:
        code = compiled.get(expression)
        if code is None:
            if len(compiled) >= _COMPILED_LIMIT:
                compiled.clear()
            code = compiled[expression] = compile(expression, "<cellwright probe>", "eval")
        value = eval(code, shell.user_global_ns, shell.user_ns)
    except BaseException as exc:  # IPython's own catches everything, a KeyboardInterrupt too
        return {"status": "error", "ename": type(exc).__name__, "evalue": str(exc), "traceback": []}
    if type(value) is str:
        return {"status": "ok", "data": {"text/plain": repr(value)}, "metadata": {}}
    data, metadata = shell.display_formatter.format(value)
    return {"status": "ok", "data": data, "metadata": metadata}

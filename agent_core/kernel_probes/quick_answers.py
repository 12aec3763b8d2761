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
kernel has the original handler: the server's next request installs this again.

Where ipykernel looks its dispatcher up for each message (7 and later: `shell_main` calls
`self.dispatch_shell`), such a request is answered one step earlier, before the dispatcher: the
dispatcher would publish "busy" and "idle" on iopub and flush both output streams (two waits on the
kernel's IO thread) for it, ~1 ms of the kernel's CPU per request, and every iopub client (the
server's activity watch, each open notebook tab) would read two status messages about a request the
user never made."""

# mypy: disable-error-code="no-untyped-def,no-untyped-call,type-arg,var-annotated,attr-defined,index,union-attr"
# No `from __future__ import`: the probe prepends its helpers to this source, and it would no longer come first.
import json
import sys

QUICK_PREFIX = "cellwright_quick_"
INSTALL_KEY = QUICK_PREFIX + "install"
_COMPILED_LIMIT = 64  # expressions kept compiled (a probe's payload makes each call's text its own)
_INSTALLED = {"status": "ok", "data": {"text/plain": repr(json.dumps({"installed": True}))}, "metadata": {}}


def install(ns, payload):
    """Wrap the kernel's execute_request handler, and its dispatcher where it is looked up per message
    (once per kernel process and version of this source)."""
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
    answer = _answering(shell, kernel)
    handlers["execute_request"] = _wrapped(_original(current), answer, version)
    if hasattr(kernel, "shell_main"):  # ipykernel >= 7: the dispatcher is looked up for each message
        kernel.dispatch_shell = _dispatching(_original(kernel.dispatch_shell), kernel, answer, version)
    return json.dumps({"installed": True})


def _original(function):
    return getattr(function, "_cellwright_original", function)


def _answering(shell, kernel):
    """The quick answer to a probes-only request, sent on `stream` (one compile cache per install)."""
    compiled = {}

    def answer(stream, ident, parent):
        results = {}
        for key, expression in parent["content"]["user_expressions"].items():
            results[key] = _INSTALLED if key == INSTALL_KEY else _evaluate(shell, compiled, expression)
        # No flush of sys.stdout/err before the reply, as ipykernel does for a cell's: a read-only
        # expression prints nothing, and each flush is a round trip to the kernel's IO thread.
        reply = {"status": "ok", "execution_count": shell.execution_count, "user_expressions": results, "payload": []}
        metadata = kernel.finish_metadata(parent, kernel.init_metadata(parent), reply)
        kernel.session.send(stream, "execute_reply", reply, parent, metadata=metadata, ident=ident)

    return answer


def _wrapped(original, answer, version):
    def execute_request(stream, ident, parent):
        content = parent.get("content") if type(parent) is dict else None
        if not _quick(content):
            return original(stream, ident, parent)
        answer(stream, ident, parent)
        return None

    execute_request._cellwright_quick = version
    execute_request._cellwright_original = original
    return execute_request


def _dispatching(original, kernel, answer, version):
    async def dispatch_shell(msg, *args, **kwargs):
        session = kernel.session
        found = None if session is None or kwargs.get("concurrent") else _probes_only(session, msg)
        if found is None:  # not even deserialized: the session refuses a message it has already seen
            return await original(msg, *args, **kwargs)
        ident, frames = found
        try:
            parent = session.deserialize(frames, content=True, copy=False)  # its signature checked
        except Exception:
            return await original(msg, *args, **kwargs)  # which logs the invalid message and drops it
        try:
            answer(_reply_stream(kernel, args[0] if args else kwargs.get("subshell_id")), ident, parent)
        except Exception:  # as the dispatcher treats a handler's: logged, and the kernel goes on
            kernel.log.error("Exception in message handler:", exc_info=True)
        return None

    dispatch_shell._cellwright_quick = version
    dispatch_shell._cellwright_original = original
    return dispatch_shell


def _probes_only(session, msg):
    """(identities, frames) of a probes-only execute_request, read without its signature (checked
    when it is deserialized); None for any other message."""
    try:
        ident, frames = session.feed_identities(msg, copy=False)
        if len(frames) < 5 or session.unpack(_bytes(frames[1])).get("msg_type") != "execute_request":
            return None
        content = _bytes(frames[4])
        if QUICK_PREFIX.encode() not in content or not _quick(session.unpack(content)):
            return None
    except Exception:  # not a message this reads: the dispatcher's to judge
        return None
    return ident, frames


def _bytes(frame):
    return frame if type(frame) is bytes else frame.bytes


def _reply_stream(kernel, subshell_id):
    """Where ipykernel's dispatcher sends a request's reply: with subshells, the socket of the request's
    (sub)shell to the shell channel's thread, which owns the shell socket."""
    if getattr(kernel, "_supports_kernel_subshells", False):
        return kernel.shell_channel_thread.manager.get_subshell_to_shell_channel_socket(subshell_id)
    return kernel.shell_stream


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

"""python -m bench.agent_tasks --base-url URL --model NAME [--mode single|multi]
    [--tool-calling native|prompt] [--tasks PATTERN] [--policy approve-all|reject-first-shell] --out FILE.json
python -m bench.agent_tasks --scripted reference|wrong|shell-first|exploring --out FILE.json   (a scripted model)
python -m bench.agent_tasks --scripted exploring --compare-sandbox   (approvals with and without the sandbox)
python -m bench.agent_tasks --compare A.json B.json"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from bench.agent_tasks.driver import APPROVAL_POLICIES, TaskResult
from bench.agent_tasks.policies import POLICIES, PolicyProcess
from bench.agent_tasks.report import compare, table
from bench.agent_tasks.runner import Settings, prepare, run_on_new_server
from bench.agent_tasks.sandbox_figure import compare_sandbox, sandbox_table
from bench.agent_tasks.tasks import all_tasks, missing_packages, select


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.agent_tasks", description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", help="An OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", help="The model name the endpoint knows")
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", ""), help="Default: $OPENAI_API_KEY")
    parser.add_argument("--scripted", choices=POLICIES, help="Run against a scripted model instead of an endpoint")
    parser.add_argument("--mode", choices=("single", "multi"), default="single")
    parser.add_argument("--tool-calling", choices=("native", "prompt"), default="native")
    parser.add_argument("--tasks", default="", help="Task ids (shell patterns, comma-separated) or a level")
    parser.add_argument("--policy", choices=APPROVAL_POLICIES, default="approve-all", help="How approvals are answered")
    parser.add_argument("--limit", type=float, default=300.0, help="Seconds per task before it is stopped")
    parser.add_argument("--jobs", type=int, default=1, help="Tasks run at once (default 1: undisturbed timings)")
    parser.add_argument("--max-model-calls", type=int, default=0, help="Cap per run (default: the server's, 30)")
    parser.add_argument(
        "--max-reply-tokens", type=int, default=0, help="Cap per model reply (default: the server's, none)"
    )
    parser.add_argument("--no-verify", action="store_true", help="Do not re-run each notebook in a shadow kernel")
    parser.add_argument("--out", help="Write the report (JSON) here")
    parser.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"), help="Compare two reports")
    parser.add_argument(
        "--compare-sandbox",
        action="store_true",
        help="Run the tasks twice, without the sandbox (every explore asks) and with it: the approvals each asked",
    )
    args = parser.parse_args(argv)
    if not args.compare and not args.scripted and not (args.base_url and args.model):
        parser.error("give --base-url and --model (or --scripted POLICY, or --compare A.json B.json)")
    return args


def _print_row(result: TaskResult, run: str = "") -> None:
    mark = "ok " if result.correct else "NO "
    extra = f" wrong {result.wrong}" if result.wrong else ""
    extra += f" error {result.error}" if result.error else ""
    run = f"{run:<8} " if run else ""
    line = (
        f"{mark} {run}{result.id:<26} {result.wall_s:6.2f} s  asked {result.approvals_asked}  re-runs {result.reruns}"
    )
    print(line + extra, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        print(compare(a, b))
        return 0
    if missing := missing_packages():
        print(f"left out: the tasks that need {', '.join(missing)} (pip install it to run them)", file=sys.stderr)
    tasks = select(all_tasks(), args.tasks)
    if not tasks:
        print(f"no task matches {args.tasks!r}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cellwright-bench-answers-") as scratch:
        expected = prepare(Path(scratch), tasks)  # the same seeded data the server's root gets
    answers = {task_id: found.answers for task_id, found in expected.items()}
    policy = PolicyProcess(tasks, answers) if args.scripted else None
    base_url = policy.base_url if policy else args.base_url
    model = args.scripted if policy else args.model  # the scripted model plays the policy its name names
    settings = Settings(
        base_url,
        model,
        args.mode,
        args.tool_calling,
        args.policy,
        args.tasks,
        args.limit,
        not args.no_verify,
        args.jobs,
        args.max_model_calls,
        args.max_reply_tokens,
    )
    api_key = "" if policy else args.api_key
    try:
        if args.compare_sandbox:
            report = compare_sandbox(settings, tasks, expected, api_key, lambda run, result: _print_row(result, run))
        else:
            report = run_on_new_server(settings, tasks, expected, api_key, _print_row)
    finally:
        if policy is not None:
            policy.close()
    print(sandbox_table(report) if args.compare_sandbox else table(report))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

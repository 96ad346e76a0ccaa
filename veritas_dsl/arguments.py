"""The `ver` command's arguments: what each subcommand accepts, and the mistakes between them
that are reported as usage errors (exit 2) before anything loads. The handlers are in cli.py."""

from __future__ import annotations

import argparse
import math
from importlib.metadata import version
from pathlib import Path

from veritas_dsl.local_cluster import address_in, parse_address
from veritas_dsl.names import MODEL_FORMATS
from veritas_dsl.solvers import registry


def parser() -> argparse.ArgumentParser:
    """The `ver` command's parser; the chosen subcommand's name is ``command``."""
    parser = argparse.ArgumentParser(
        prog="ver", description="Verify properties of tree ensembles, or find counterexamples."
    )
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks of internal errors and engine faults"
    )
    parser.add_argument("--version", action="version", version=f"ver {version('veritas-dsl')}")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run every query of a .ver file")
    run.add_argument("spec", help="the .ver file")
    run.add_argument("--solver", help="engine for every query (overrides `solve with`)")
    run.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="time limit per engine and query (default 60)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON document")
    run.add_argument("--csv", metavar="FILE", help="also write one line per query and row to FILE")
    run.add_argument(
        "--witnesses",
        metavar="FILE",
        help="also write every witness to FILE (CSV: query, row, instance, then the features)",
    )
    _add_streams(run)
    _add_workers(run)
    run.add_argument(
        "--trust-pickle",
        action="store_true",
        help="allow scikit-learn pickle/joblib models, which runs code from the file",
    )
    run.set_defaults(parser=run)

    check = commands.add_parser("check", help="run the properties and expectations of .ver files")
    check.add_argument("paths", nargs="+", help=".ver files, or folders searched for them")
    check.add_argument("--solver", help="engine for every query (overrides `solve with`)")
    check.add_argument("--timeout", type=float, metavar="SECONDS", help="time limit per engine")
    check.add_argument("--json", action="store_true", help="print one JSON document")
    _add_to_optimum(check)
    check.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    _add_workers(check)
    check.add_argument("--trust-pickle", action="store_true", help="allow pickle/joblib models")
    check.set_defaults(parser=check)

    compare = commands.add_parser("compare", help="run every query on several engines")
    compare.add_argument("spec", help="the .ver file")
    compare.add_argument(
        "--solvers",
        default="astar,milp,sat",
        help="engines, comma-separated (default astar,milp,sat)",
    )
    compare.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="time limit per engine and query (default 60)",
    )
    compare.add_argument("--plot", metavar="PNG", help="draw the anytime bounds of every engine")
    compare.add_argument("--trust-pickle", action="store_true", help="allow pickle/joblib models")
    compare.set_defaults(parser=compare)

    inspect = commands.add_parser("inspect", help="describe a model file")
    inspect.add_argument(
        "model", help="model file (XGBoost JSON/UBJSON, LightGBM text, skops, ours)"
    )
    inspect.add_argument(
        "--format", choices=MODEL_FORMATS, help="model format (default: from the file)"
    )
    inspect.add_argument(
        "--trust-pickle",
        action="store_true",
        help="allow loading scikit-learn pickle/joblib files, which runs code from the file",
    )
    inspect.add_argument("--json", action="store_true", help="print one JSON document")

    for add in (_add_leakage, _add_membership, _add_cap, _add_editor):
        add(commands)
    return parser


def _add_editor(commands) -> None:
    fmt = commands.add_parser("fmt", help="lay .ver files out canonically (docs/editors.md)")
    fmt.add_argument(
        "paths", nargs="+", help=".ver and Markdown (its ver blocks) files, or folders searched"
    )
    fmt.add_argument("--check", action="store_true", help="change nothing; exit 1 if one would")
    commands.add_parser("lsp", help="the language server, on stdin and stdout")
    commands.add_parser(
        "warmup",
        help="compile every A* kernel into the kernel cache now, so that later runs only load "
        "them (a CI image, a Docker build)",
    )


def _add_to_optimum(check) -> None:
    check.add_argument(
        "--to-optimum",
        action="store_true",
        help="solve each query to its optimum, even once its bounds settle every `expect` "
        "(by default an engine stops then: status `decided`)",
    )


def _add_streams(run) -> None:
    run.add_argument(
        "--jsonl", metavar="FILE", help="also write each result to FILE as it finishes (JSON Lines)"
    )
    run.add_argument(
        "--resume",
        metavar="FILE",
        help="answer only the rows a --jsonl FILE of the same spec lacks, and append them to it",
    )


def _add_workers(command) -> None:
    workers = command.add_mutually_exclusive_group()
    workers.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="processes for batches (default: cores)"
    )
    workers.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run every query on a Dask cluster: its scheduler's address (tcp://host:8786), "
        "or local:N for N local worker processes",
    )
    workers.add_argument(
        "--scheduler-file",
        metavar="FILE",
        help="as --scheduler, at the address a Dask scheduler wrote in FILE "
        "(dask scheduler --scheduler-file FILE; awaited 10 s)",
    )


def _add_leakage(commands) -> None:
    leak = commands.add_parser(
        "leakage", help="what comparing a DaRE forest before and after a deletion reveals"
    )
    leak.add_argument("source", help="a spec (.ver), or a saved DaRE forest before the deletion")
    leak.add_argument(
        "--delete", metavar="ROWS", help="ids of the rows to delete: 3,17,42, or @FILE (one a line)"
    )
    leak.add_argument("--model", help="the spec's model to report on, or to delete from")
    leak.add_argument("--trust-pickle", action="store_true", help="allow pickle/joblib models")
    leak.add_argument("--solver", help="engine for the two optimisations (default astar)")
    leak.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="time limit of the whole report (default 60); at it, the bounds found so far",
    )
    leak.add_argument("--json", action="store_true", help="print one JSON document")
    leak.set_defaults(parser=leak)


def _add_membership(commands) -> None:
    member = commands.add_parser(
        "membership",
        help="how well a membership attack tells a DaRE forest's deleted rows from unseen ones",
    )
    member.add_argument("source", help="a spec (.ver), or a saved DaRE forest before the deletion")
    member.add_argument(
        "--delete", metavar="ROWS", help="ids of the rows to delete: 3,17,42, or @FILE (one a line)"
    )
    member.add_argument("--model", help="the spec's model to report on, or to delete from")
    member.add_argument(
        "--outside",
        required=True,
        metavar="CSV",
        help="rows never in the forest's training set: a CSV of its features, in its order, "
        "and a column `label` (0 or 1)",
    )
    member.add_argument(
        "--seeds", type=int, default=5, metavar="N", help="games played, for the interval (5)"
    )
    member.add_argument(
        "--shadows", type=int, default=4, metavar="N", help="shadow forests per game (default 4)"
    )
    member.add_argument("--trust-pickle", action="store_true", help="allow pickle/joblib models")
    member.add_argument("--json", action="store_true", help="print one JSON document")
    member.set_defaults(parser=member)


def _add_cap(commands) -> None:
    cap = commands.add_parser(
        "cap", help="publish a DaRE forest's deletion with its footprint capped, proven"
    )
    cap.add_argument("source", help="a spec (.ver), or a saved DaRE forest before the deletion")
    cap.add_argument(
        "--tau", type=float, required=True, help="the cap: |after'(x) - before(x)| <= TAU"
    )
    cap.add_argument(
        "--delete", metavar="ROWS", help="ids of the rows to delete: 3,17,42, or @FILE (one a line)"
    )
    cap.add_argument("--model", help="the spec's model to cap, or to delete from")
    cap.add_argument("--trust-pickle", action="store_true", help="allow pickle/joblib models")
    cap.add_argument("--solver", help="engine proving the footprint (default astar)")
    cap.add_argument(
        "--steps", type=int, default=8, metavar="N",
        help="footprints the engine measures (default 8; 0: the trees' own bound, no engine)",
    )  # fmt: skip
    cap.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS",
        help="time limit of each engine call (default 10); at it, its bound still counts",
    )  # fmt: skip
    cap.add_argument(
        "--noise", type=float, default=0.0, metavar="SHARE",
        help="share of tau given to seeded noise in every leaf, in [0, 1) (default 0)",
    )  # fmt: skip
    cap.add_argument(
        "--seed", type=int, metavar="N", help="the noise's seed (default: fresh entropy)"
    )
    cap.add_argument("--save", metavar="FILE", help="write the capped model (ensemble JSON)")
    cap.add_argument("--json", action="store_true", help="print one JSON document")
    cap.set_defaults(parser=cap)


def check(args: argparse.Namespace) -> None:
    """Command-line mistakes are reported as such (usage, exit 2) before anything loads."""
    names = []
    if getattr(args, "solver", None):
        names.append(("--solver", args.solver))
    if getattr(args, "solvers", None):
        names += [("--solvers", n.strip()) for n in args.solvers.split(",") if n.strip()]
    for option, name in names:
        if name not in registry.ENGINES:
            args.parser.error(
                f"argument {option}: unknown engine {name!r} "
                f"(choose from {', '.join(sorted(registry.ENGINES))})"
            )
    if getattr(args, "solver", None) and not registry.ENGINES[args.solver].available():
        availability = registry.ENGINES[args.solver].available().value
        args.parser.error(
            f"argument --solver: engine {args.solver} is not available here ({availability})"
        )
    if getattr(args, "scheduler_file", None):
        try:
            args.scheduler = address_in(args.scheduler_file)
        except ValueError as error:
            args.parser.error(f"argument --scheduler-file: {error}")
    if getattr(args, "scheduler", None):
        try:
            parse_address(args.scheduler)
        except ValueError as error:
            args.parser.error(f"argument --scheduler: {error}")
    for option in ("seeds", "shadows"):
        if getattr(args, option, 1) < 1:
            args.parser.error(f"argument --{option}: must be at least 1")
    if getattr(args, "steps", 0) < 0:
        args.parser.error("argument --steps: must be at least 0")
    tau = getattr(args, "tau", 0.0)
    if not (math.isfinite(tau) and tau >= 0):
        args.parser.error(f"argument --tau: must be a number >= 0, not {tau:g}")
    noise = getattr(args, "noise", 0.0)
    if not 0 <= noise < 1:  # NaN fails too
        args.parser.error(f"argument --noise: must be a share in [0, 1), not {noise:g}")
    if (getattr(args, "seed", None) or 0) < 0:
        args.parser.error(f"argument --seed: must be at least 0, not {args.seed}")
    resume, jsonl = getattr(args, "resume", None), getattr(args, "jsonl", None)
    if resume and jsonl and Path(resume).resolve() != Path(jsonl).resolve():
        args.parser.error("argument --jsonl: --resume FILE appends to FILE; give one file")
    if resume and not Path(resume).is_file():
        args.parser.error(f"argument --resume: no file {resume} (write one with --jsonl)")
    for option in ("csv", "witnesses", "junit", "plot", "jsonl", "save"):
        target = getattr(args, option, None)
        if target and not Path(target).resolve().parent.is_dir():
            args.parser.error(f"argument --{option}: no folder {Path(target).parent} to write in")

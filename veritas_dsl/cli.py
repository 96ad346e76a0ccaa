"""The `ver` command. The only module that writes to the terminal."""

from __future__ import annotations

import argparse
import contextlib
import enum
import json
import logging
import sys
import traceback

from veritas_dsl import arguments, steps
from veritas_dsl.atomic import write_text
from veritas_dsl.diagnostics import SpecError, render
from veritas_dsl.errors import SoundnessError, UserError
from veritas_dsl.model import load_model
from veritas_dsl.model.load import pickle_option
from veritas_dsl.model.parity import check_library
from veritas_dsl.model.summary import ModelSummary, summarize
from veritas_dsl.outcome import Interrupted
from veritas_dsl.report import csv as csv_report
from veritas_dsl.report import json as json_report
from veritas_dsl.report import jsonl, terminal
from veritas_dsl.report import progress as progress_report
from veritas_dsl.result import Termination


class ExitCode(enum.IntEnum):
    """Exit codes a CI script can trust."""

    OK = 0
    """Everything ran and every check held."""
    FAILED = 1
    """A check (`expect`, `property`) failed."""
    ERROR = 2
    """The spec, a model, an engine or the tool itself failed, or an engine could not take a
    query: not everything asked for ran."""
    INTERRUPTED = 130
    """Ctrl-C stopped the run (the shell's convention, 128 + SIGINT); what finished is shown."""


def main(argv: list[str] | None = None) -> int:
    args = arguments.parser().parse_args(argv)
    arguments.check(args)
    with _engine_tracebacks(args.debug), pickle_option("--trust-pickle"):
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    try:
        return int(HANDLERS[args.command](args))
    except UserError as error:  # the spec, a model, an engine choice, an output file
        print(error.render(), file=sys.stderr)
        return ExitCode.ERROR
    except SoundnessError as error:
        # A wrong answer is the worst bug we can have: say so plainly.
        print(f"error: soundness check failed, please report this bug: {error}", file=sys.stderr)
        return ExitCode.ERROR
    except KeyboardInterrupt:  # before any query ran (loading models, say)
        print("interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`ver ... | head`); nothing more to say, and nowhere to say it.
        sys.stderr.close()
        return ExitCode.OK
    except Exception as error:  # the last line of defence: no traceback unless asked
        if args.debug:
            traceback.print_exc()
        else:
            print(
                f"internal error: {error!r} (run with --debug for the traceback)", file=sys.stderr
            )
        return ExitCode.ERROR


@contextlib.contextmanager
def _engine_tracebacks(shown: bool):
    """With ``--debug``, the library's debug log on stderr meanwhile: an engine's fault becomes
    an ``error`` result, and its traceback is logged there."""
    if not shown:
        yield
        return
    logger = logging.getLogger("veritas_dsl")
    handler, level = logging.StreamHandler(sys.stderr), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _run(args: argparse.Namespace) -> ExitCode:
    from veritas_dsl.spec import load

    progress = progress_report.Bar(enabled=not args.json)
    try:
        with steps.listening(progress.step):  # DaRE fits and deletions, families
            spec = load(args.spec, trust_pickle=args.trust_pickle)
    finally:
        progress.close()  # erased before warnings or errors are printed
    warnings = spec.warnings()
    for warning in warnings:
        print(render(warning, spec.sources) + "\n", file=sys.stderr)
    spec_hash = jsonl.fingerprint(spec.digest(), args.solver, args.timeout)
    streams = jsonl.Streams(args.resume or args.jsonl, bool(args.resume), args.csv, spec_hash)
    interrupted = False

    def done(run, finished: int, total: int) -> None:
        progress.done(run, finished, total)
        streams.write(run)

    try:
        runs = spec.run(
            args.solver,
            args.timeout,
            progress.engine,
            jobs=_jobs(args.jobs),
            done=done,
            skip=streams.skip,
            scheduler=args.scheduler,
        )
    except SpecError as error:
        error.sources = spec.sources
        raise
    except Interrupted as stop:
        runs, interrupted = stop.partial, True
    finally:
        progress.close()
        streams.close(created=sys.exc_info()[0] is None and not interrupted)
    tally = streams.tally()
    if tally and tally.repeats(streams.target):
        print(tally.repeats(streams.target), file=sys.stderr)
    if args.json:
        print(json_report.dumps(runs, warnings, interrupted))
    else:
        out, err = terminal.render(runs, args.spec)
        print(out + (f"\n{tally.text(streams.target)}" if tally else ""))
        if err:
            print(err, file=sys.stderr)
    streams.check()
    if args.witnesses:
        write_text(args.witnesses, csv_report.witnesses(runs))
    if interrupted:
        count = f"{len(runs)} quer{'y' if len(runs) == 1 else 'ies'}"
        print(f"interrupted: the report shows the {count} run so far", file=sys.stderr)
        return ExitCode.INTERRUPTED
    if any(run.errored for run in runs) or (tally and tally.errored):
        return ExitCode.ERROR
    failed = any(run.failed for run in runs) or (tally and tally.failed)
    return ExitCode.FAILED if failed else ExitCode.OK


def _jobs(requested: int | None) -> int:
    from veritas_dsl.parallel import default_jobs

    return default_jobs() if requested is None else max(1, requested)


def _check(args: argparse.Namespace) -> ExitCode:
    from veritas_dsl.cluster import connected
    from veritas_dsl.report import checks
    from veritas_dsl.spec import check_file, spec_files

    files = spec_files(args.paths)
    jobs = _jobs(args.jobs)

    def warn(warning) -> None:
        print(render(warning) + "\n", file=sys.stderr)

    outcomes = []
    interrupted = False
    with connected(args.scheduler) as scheduler:  # one cluster for every file
        options = (args.solver, args.timeout, args.trust_pickle, jobs, warn, scheduler)
        options += (args.to_optimum,)
        for f in files:
            try:
                outcomes.append(check_file(f, *options))
            except KeyboardInterrupt:  # while loading the file's models
                interrupted = True
            if interrupted or outcomes[-1].interrupted:
                interrupted = True
                break
    print(checks.render_json(outcomes) if args.json else checks.render_text(outcomes))
    if args.junit:
        write_text(args.junit, checks.render_junit(outcomes))
    if interrupted:
        print(f"interrupted: {len(outcomes)} of {len(files)} files checked", file=sys.stderr)
        return ExitCode.INTERRUPTED
    errored = any(run.errored for o in outcomes for run in o.runs)
    if any(o.errors for o in outcomes) or errored or not files:
        if not files:
            print("error: no .ver files found", file=sys.stderr)
        return ExitCode.ERROR
    failed = any(c.holds is not True for o in outcomes for r in o.runs for c in r.checks)
    return ExitCode.FAILED if failed else ExitCode.OK


def _compare(args: argparse.Namespace) -> ExitCode:
    from veritas_dsl.compare import compare
    from veritas_dsl.report import compare as report
    from veritas_dsl.spec import load

    engines = [name.strip() for name in args.solvers.split(",") if name.strip()]
    spec = load(args.spec, trust_pickle=args.trust_pickle)
    interrupted = False
    try:
        comparisons = compare(spec.lowered(), engines, args.timeout)
    except Interrupted as stop:
        comparisons, interrupted = stop.partial, True
    print(report.table(comparisons))
    if args.plot:
        panels = report.plot(comparisons, args.plot, title=f"ver compare {args.spec}")
        print(f"plot: {panels} panel{'s' if panels != 1 else ''} written to {args.plot}")
    for comparison in comparisons:
        for engine, result in comparison.results.items():
            if result.termination is Termination.ERROR:
                message = result.message or "no reason given"
                print(
                    f"error: query {comparison.name}: engine {engine} failed: {message}",
                    file=sys.stderr,
                )
    disagreements = [c.disagreement for c in comparisons if c.disagreement]
    for message in disagreements:
        print(f"error: {message}", file=sys.stderr)
    if interrupted:
        print("interrupted: the table shows what ran so far", file=sys.stderr)
        return ExitCode.INTERRUPTED
    if disagreements:
        return ExitCode.FAILED
    errored = any(
        r.termination is Termination.ERROR for c in comparisons for r in c.results.values()
    )
    return ExitCode.ERROR if errored else ExitCode.OK


def _inspect(args: argparse.Namespace) -> ExitCode:
    model = load_model(args.model, args.format, trust_pickle=args.trust_pickle)
    summary = summarize(model)
    parity = check_library(model) if model.library is not None else None
    if args.json:
        document = json_report.versioned(summary.to_dict())
        if parity is not None:
            document["parity"] = {
                "library": model.library.name,
                "points": parity.points,
                "worst_error": parity.worst_error,
                "mismatches": parity.mismatches,
            }
        print(json.dumps(document, indent=2))
    else:
        print(_render_summary(summary))
        if parity is not None:
            verdict = "matches" if parity.ok else f"DIFFERS on {parity.mismatches} of"
            print(
                f"parity     {verdict} {model.library.name} on {parity.points} points "
                f"(worst relative error {parity.worst_error:.2g})"
            )
    if parity is not None and not parity.ok:
        point = parity.first_mismatch.tolist()
        print(
            f"error: the imported model differs from {model.library.name} at {point}",
            file=sys.stderr,
        )
        return ExitCode.ERROR
    return ExitCode.OK


def _leakage(args: argparse.Namespace) -> ExitCode:
    from veritas_dsl.unlearning import report as leakage_report
    from veritas_dsl.unlearning.leakage import DEFAULT_ENGINE, DEFAULT_TIMEOUT_S
    from veritas_dsl.unlearning.targets import is_spec, targets

    ids = args.delete or "0"
    if not ids.startswith("@") and not all(p.strip().isdigit() for p in ids.split(",")):
        args.parser.error(f"argument --delete: {ids!r} is not a list of row ids like 3,17 or @FILE")
    timeout = DEFAULT_TIMEOUT_S if args.timeout is None else args.timeout
    found = [
        (t.model, t.base, t.leakage(args.solver or DEFAULT_ENGINE, timeout))
        for t in targets(args.source, args.delete, args.model, args.trust_pickle)
    ]
    if not is_spec(args.source):
        document, text = found[0][2].to_dict(), leakage_report.render(found[0][2])
    else:
        document, text = leakage_report.spec_document(found), leakage_report.render_spec(found)
    print(json.dumps(json_report.versioned(document), indent=2) if args.json else text)
    # A bound a limit left open is an answer, as for `ver run`'s queries without `expect`.
    extremes = [e for _, _, f in found for e in (f.minimum, f.maximum)]
    if any(e.termination == Termination.INTERRUPTED.value for e in extremes):
        print("interrupted: the report shows the bounds found so far", file=sys.stderr)
        return ExitCode.INTERRUPTED
    return ExitCode.OK


def _membership(args: argparse.Namespace) -> ExitCode:
    from pathlib import Path

    from veritas_dsl.unlearning import report as leakage_report
    from veritas_dsl.unlearning.membership import membership
    from veritas_dsl.unlearning.targets import is_spec, outside_rows, targets

    ids = args.delete
    if ids and not ids.startswith("@") and not all(p.strip().isdigit() for p in ids.split(",")):
        args.parser.error(f"argument --delete: {ids!r} is not a list of row ids like 3,17 or @FILE")
    found, pairs = [], targets(args.source, args.delete, args.model, args.trust_pickle)
    X, y = outside_rows(Path(args.outside), pairs[0].before.n_features)
    for target in pairs:
        game = membership(target.before, [target.deleted()], X, y, args.seeds, args.shadows)
        found.append((target.model, target.base, game))
    if not is_spec(args.source):
        document, text = found[0][2].to_dict(), leakage_report.render_membership(found[0][2])
    else:
        document = {"results": [{"model": m, "base": b, **g.to_dict()} for m, b, g in found]}
        text = "\n\n".join(
            f"models      {b} -> {m or 'its deletion'}\n{leakage_report.render_membership(g)}"
            for m, b, g in found
        )
    print(json.dumps(json_report.versioned(document), indent=2) if args.json else text)
    return ExitCode.OK


def _cap(args: argparse.Namespace) -> ExitCode:
    from veritas_dsl.unlearning import report as leakage_report
    from veritas_dsl.unlearning.cap import CapError, cap
    from veritas_dsl.unlearning.leakage import DEFAULT_ENGINE
    from veritas_dsl.unlearning.targets import is_spec, targets

    ids = args.delete
    if ids and not ids.startswith("@") and not all(p.strip().isdigit() for p in ids.split(",")):
        args.parser.error(f"argument --delete: {ids!r} is not a list of row ids like 3,17 or @FILE")
    pairs = targets(args.source, args.delete, args.model, args.trust_pickle)
    if args.save and len(pairs) > 1:
        raise CapError(
            f"--save writes one model; {args.source} derives {len(pairs)} by delete(...): "
            "pick one with --model NAME"
        )
    found = []
    for t in pairs:
        capped = cap(
            t.before.to_ensemble(),
            t.after.to_ensemble(),
            args.tau,
            engine=args.solver or DEFAULT_ENGINE,
            timeout_s=args.timeout,
            steps=args.steps,
            features=t.features,
            groups=t.groups,
            noise=args.noise,
            seed=args.seed,
        )
        found.append((t.model, t.base, t.deleted(), capped))
    if args.save:
        found[0][3].model.save(args.save)
    results = [
        {"model": m, "base": b, "deleted": d, **c.to_dict()} for m, b, d, c in found
    ]
    if not is_spec(args.source):
        document = {k: v for k, v in results[0].items() if k not in ("model", "base")}
    else:
        document = {"results": results}
    text = "\n\n".join(leakage_report.render_cap(*entry) for entry in found)
    print(json.dumps(json_report.versioned(document), indent=2) if args.json else text)
    return ExitCode.OK


def _fmt(args: argparse.Namespace) -> ExitCode:
    from veritas_dsl.editor.format import format_file
    from veritas_dsl.spec import spec_files

    code = ExitCode.OK
    for path in spec_files(args.paths, (".ver", ".md")):
        try:
            changed = format_file(path, write=not args.check)
        except SpecError as error:
            print(error.render(), file=sys.stderr)
            code = ExitCode.ERROR
            continue
        if changed:
            print(f"{'would reformat' if args.check else 'reformatted'} {path}")
            code = max(code, ExitCode.FAILED if args.check else ExitCode.OK)
    return code


def _lsp(args: argparse.Namespace) -> ExitCode:
    from veritas_dsl.editor.lsp import serve

    serve()
    return ExitCode.OK


def _warmup(args: argparse.Namespace) -> ExitCode:
    from veritas_dsl.jit import cache_dir
    from veritas_dsl.solvers.astar.ready import KINDS, describe, ready

    where = cache_dir()
    if where is None:
        print(
            "error: no kernel cache can be written (set NUMBA_CACHE_DIR to a writable folder): "
            "every process compiles the kernels itself",
            file=sys.stderr,
        )
        return ExitCode.ERROR
    for i, kind in enumerate(KINDS, 1):
        print(f"[{i}/{len(KINDS)}] A* search over {describe(kind)} ... ", end="", file=sys.stderr)
        sys.stderr.flush()
        print(f"{ready([kind]):.1f} s", file=sys.stderr)
    print(f"every A* kernel is in {where}", file=sys.stderr)
    return ExitCode.OK


def _render_summary(s: ModelSummary) -> str:
    base = ", ".join(f"{b:.6g}" for b in s.base_score)
    lines = [
        f"model      {s.source}",
        f"task       {s.task}, {s.n_outputs} output(s), {s.n_features} features",
        f"trees      {s.n_trees} ({s.n_nodes} nodes, {s.n_leaves} leaves)",
        f"depth      max {s.max_depth}, mean {s.mean_depth:.2f}",
        f"leaves     values in [{s.leaf_min:.6g}, {s.leaf_max:.6g}], base score {base}",
        f"features   {len(s.features)} of {s.n_features} used",
    ]
    width = max((len(f.name) for f in s.features), default=0)
    lines.append(f"  {'feature':<{width}}  {'splits':>6}  {'thresholds':>10}  range")
    for f in s.features:
        lines.append(
            f"  {f.name:<{width}}  {f.splits:>6}  {f.thresholds:>10}  "
            f"[{f.lowest:.6g}, {f.highest:.6g}]"
        )
    return "\n".join(lines)


HANDLERS = {
    "run": _run,
    "check": _check,
    "compare": _compare,
    "inspect": _inspect,
    "leakage": _leakage,
    "membership": _membership,
    "cap": _cap,
    "fmt": _fmt,
    "lsp": _lsp,
    "warmup": _warmup,
}

if __name__ == "__main__":
    sys.exit(main())

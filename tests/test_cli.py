"""CLI: summarize output, and bad input -> one clear message, exit code 2, no traceback."""

import json
import sqlite3
import subprocess
import sys

import pytest

from dashboard.cli import main

from paths import SAMPLES, SEED, nsys_trace

NCCL = SAMPLES / "nsys2026.2_2gpu_nccl_before.sqlite"


def test_summarize_to_stdout(capsys):
    assert main(["summarize", str(nsys_trace("nsys2025.5_rtx3060_cuda_graph_launch.sqlite"))]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kernel_count"] == 3 and out["top_kernels"] == [["add_one", [3, 3.84e-06]]]


def test_summarize_dispatch_prefix(capsys):
    trace = str(nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite"))
    assert main(["summarize", trace, "--dispatch-prefix", "PLE_lookup_tokens=16"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dispatch"] == {"PLE_lookup_tokens=1600": 2}


def test_summarize_seed_json_round_trip(capsys, seed_dict):
    assert main(["summarize", str(SEED)]) == 0
    assert json.loads(capsys.readouterr().out)["kernel_count"] == seed_dict["kernel_count"]


def written(name, data):
    def make(d):
        (d / name).write_bytes(data)
        return d / name

    return make


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d / "missing.sqlite", "no such file"),
        (lambda d: d, "not a regular file"),
        (written("e.sqlite", b""), "empty"),
        (written("t.sqlite", b"hello"), "not a SQLite database (no 'SQLite format 3' header)"),
        (written("j.json", b'{"a": '), "malformed JSON"),
    ],
)
def test_bad_input_exit_2(tmp_path, capsys, make, message):
    assert main(["summarize", str(make(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tracedash: error: ") and message in err and "Traceback" not in err


def test_unwritable_output(tmp_path, capsys):
    assert main(["summarize", str(SEED), "-o", str(tmp_path / "no" / "dir" / "x.json")]) == 2
    assert "cannot write" in capsys.readouterr().err


@pytest.mark.parametrize("spelling", ["same", "dotted", "link"])
def test_summarize_never_writes_over_the_trace_it_reads(tmp_path, capsys, spelling):
    """`summarize T -o T` wrote the summary over the user's trace and exited 0: now exit 2 and the file unchanged,
    however the output path spells it."""
    import hashlib
    import os
    import shutil

    trace = tmp_path / "run.sqlite"
    shutil.copy(nsys_trace("nsys2026.2_2gpu_nccl_before.sqlite"), trace)
    before = hashlib.sha256(trace.read_bytes()).hexdigest()
    out = {"same": trace, "dotted": tmp_path / "." / "run.sqlite", "link": tmp_path / "alias.sqlite"}[spelling]
    if spelling == "link":
        os.symlink(trace, out)
    assert main(["summarize", "--no-cache", str(trace), "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"tracedash: error: {out}: is the trace being read; give another file to write, or leave -o out\n"
    )
    assert hashlib.sha256(trace.read_bytes()).hexdigest() == before


def test_export_and_report_never_write_over_the_trace_they_read(tmp_path, capsys):
    trace = tmp_path / "t.html"  # a name `report` would write to; the file is a summary JSON
    trace.write_bytes(SEED.read_bytes())
    assert main(["report", str(trace), "-o", str(trace)]) == 2
    assert "is the trace being read" in capsys.readouterr().err
    assert trace.read_bytes() == SEED.read_bytes()


def test_serve_missing_trace_exit_2(tmp_path, capsys):
    assert main(["serve", str(tmp_path / "nope.sqlite")]) == 2
    assert "no such file" in capsys.readouterr().err


def _other_sqlite(path):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()


@pytest.mark.parametrize(
    "make, message",
    [
        (_other_sqlite, "other.db: a SQLite database but not an nsys export (found: t)"),
        (
            lambda p: p.write_bytes(NCCL.read_bytes()[:100_000]),
            "other.db: the SQLite file is damaged or truncated (database disk image is malformed)",
        ),
        (
            lambda p: p.write_bytes(b"SQLite format 3\x00" + b"garbage" * 1000),
            "other.db: the SQLite file is damaged or truncated (file is not a database)",
        ),
    ],
)
def test_serve_refuses_a_named_sqlite_file_that_is_no_readable_nsys_export(tmp_path, capsys, make, message):
    """QA: serve started serving these (only the header was checked), where summarize refuses them."""
    bad = tmp_path / "other.db"
    make(bad)
    before = bad.read_bytes()
    assert main(["serve", str(bad), "--port", "1"]) == 2
    assert capsys.readouterr().err.startswith(f"tracedash: error: {message}")
    assert bad.read_bytes() == before


@pytest.mark.parametrize("args", [["{bad}"], [str(SEED), "{bad}"], ["--ranks", str(SEED), "{bad}"]])
def test_serve_refuses_a_named_file_that_is_no_trace_before_serving(tmp_path, capsys, args):
    bad = tmp_path / "t.sqlite"
    bad.write_bytes(b"hello")
    assert main(["serve", *[a.format(bad=bad) for a in args], "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "tracedash: error: t.sqlite: not a SQLite database (no 'SQLite format 3' header). Export an nsys report "
        "with: nsys export --type sqlite REPORT.nsys-rep\n"
    )
    assert bad.read_bytes() == b"hello"


def test_console_script_runs_as_module(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "dashboard", "summarize", str(tmp_path / "x.sqlite")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr


def test_inspect_reports_loaders_and_missing_columns(capsys, tmp_path):
    assert main(["inspect", str(nsys_trace("nsys2024.5_a100_cloverleaf.sqlite"))]) == 0
    out = capsys.readouterr().out
    assert out.startswith("nsys2024.5_a100_cloverleaf.sqlite: nsys 2024.5.1.113 (schema 3.13.2)")
    assert "NVTX ranges and marks    absent" in out
    assert "kernels                  ok       CUPTI_ACTIVITY_KIND_KERNEL (1,312 rows)" in out
    assert "CUPTI_ACTIVITY_KIND_KERNEL [" in out
    assert main(["inspect", "--json", str(nsys_trace("nsys2024.5_a100_cloverleaf.sqlite"))]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["loaders"]["memcpy"] == {"table": "CUPTI_ACTIVITY_KIND_MEMCPY", "status": "ok", "missing": []}
    assert info["tables"]["CUPTI_ACTIVITY_KIND_KERNEL"][4] == "greenContextId"  # inserted mid-table in 2024.5


def test_inspect_sqlite_without_nsys_tables_exit_2(tmp_path, capsys):
    import sqlite3

    with sqlite3.connect(tmp_path / "plain.sqlite") as con:
        con.execute("CREATE TABLE people (name TEXT)")
    con.close()
    assert main(["inspect", str(tmp_path / "plain.sqlite")]) == 2
    assert capsys.readouterr().err == (
        "tracedash: error: plain.sqlite: a SQLite database but not an nsys export (found: people). Expected "
        "tables such as StringIds, CUPTI_ACTIVITY_KIND_KERNEL or NVTX_EVENTS.\n"
    )


def test_cache_dir_that_is_a_file_exit_2(tmp_path, capsys):
    f = tmp_path / "cache-file"
    f.write_text("x")
    for action in ("info", "clear"):
        assert main(["cache", action, "--cache-dir", str(f)]) == 2
        assert capsys.readouterr().err == f"tracedash: error: {f}: not a directory\n"


@pytest.mark.skipif(not __import__("os").path.exists("/dev/null"), reason="needs /dev/null")
def test_device_is_not_called_a_directory(tmp_path, capsys):
    assert main(["summarize", "/dev/null"]) == 2
    assert capsys.readouterr().err == (
        "tracedash: error: /dev/null: not a regular file (a device, pipe or socket); pass a .sqlite or .json file\n"
    )
    assert main(["summarize", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"tracedash: error: {tmp_path}: not a regular file (a directory); pass a .sqlite or .json file\n"
    )


def test_several_traces_output_to_an_existing_file_exit_2(tmp_path, capsys):
    out = tmp_path / "out.json"
    out.write_text("keep")
    assert main(["summarize", str(SEED), str(SEED), "-o", str(out), "--no-cache"]) == 2
    assert capsys.readouterr().err == f"tracedash: error: {out} is a file; with several traces -o names a folder\n"
    assert out.read_text() == "keep"


def test_inspect_bad_input_exit_2(tmp_path, capsys):
    (tmp_path / "t.sqlite").write_text("hello")
    assert main(["inspect", str(tmp_path / "t.sqlite")]) == 2
    assert "not a SQLite database" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["serve", "--port", "99999"], "port must be 1-65535"),
        (["serve", "--port", "x"], "not a port number"),
        (["summarize", "x.sqlite", "--dispatch-prefix", "  "], "must not be empty"),
        (
            ["diff", "a.json", "b.json", "--fail-if-slower", "-5"],
            "argument --fail-if-slower: PCT must be 0 or more (how much slower is allowed), got -5",
        ),
        (["serve", "--memory-limit", "-1G"], "argument --memory-limit: not a size: '-1G' (use e.g. 512M, 2G, 1.5GiB)"),
        (["serve", "--memory-limit=-1G"], "argument --memory-limit: not a size: '-1G' (use e.g. 512M, 2G, 1.5GiB)"),
        (["serve", "--max-upload", "-.5G"], "argument --max-upload: not a size: '-.5G'"),
        (
            ["serve", "--memory-limit", "99999999999999999999999G"],
            "argument --memory-limit: size too large: '99999999999999999999999G' (at most 1,048,576T)",
        ),
        (  # 400 digits: no finite float (int() of it raised OverflowError: a traceback)
            ["serve", "--upload-space", "9" * 400],
            "argument --upload-space: size too large: '99999999999999999999…999999999999' (at most 1,048,576T)",
        ),
        (["serve", "--max-unzipped", "1048577T"], "size too large"),
        (
            ["summarize", "x.sqlite", "--slices", "9" * 400],
            "--slices must be 1-4096, got 99999999999999999999…999999999999",
        ),
        (["serve", "--port", "x" + "9" * 400], "not a port number: 'x9999999999999999999…999999999999'"),
        (["steps", "x.sqlite", "--pid", "9" * 400], "not a process id: '99999999999999999999…999999999999'"),
        (["steps", "x.sqlite", "--pid", str(2**63)], "not a process id: '9223372036854775808'"),
    ],
)
def test_bad_options_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_serve_on_a_port_in_use_exit_2(capsys):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert main(["serve", str(SEED), "--port", str(port)]) == 2
    assert f"cannot serve on 127.0.0.1:{port}" in capsys.readouterr().err


def test_serve_on_an_unknown_host_says_only_that(capsys):
    # The address is checked before the "anyone who can reach it" warning: a host that cannot be served gets one line.
    assert main(["serve", str(SEED), "--host", "999.1.1.1", "--port", "8099"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tracedash: error: cannot serve on 999.1.1.1:8099: "), err


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"gpu_activity_span_s": 1e300, "gpu_busy_union_s": 0, "kernel_count": 1}', "out of range"),
        ('{"gpu_activity_span_s": 1' + "0" * 400 + ', "gpu_busy_union_s": 0, "kernel_count": 1}', "out of range"),
        ('{"gpu_activity_span_s": 1, "gpu_busy_union_s": 5, "kernel_count": 1}', "exceeds gpu_activity_span_s"),
        ('{"gpu_activity_span_s": 1, "gpu_busy_union_s": 0, "kernel_count": -3}', "must not be negative"),
        (
            '{"gpu_activity_span_s": 1, "gpu_busy_union_s": 0, "kernel_count": 1, "api": {"c": [1e25, 1]}}',
            "out of range",
        ),
        (
            '{"gpu_activity_span_s": 1, "gpu_busy_union_s": 0, "kernel_count": 1, '
            '"dispatch_timeline": [{"start_ns": 1180591620717411303424, "name": "x"}]}',
            "out of range",
        ),
    ],
)
def test_impossible_summary_values_exit_2(tmp_path, capsys, content, message):
    p = tmp_path / "s.json"
    p.write_text(content)
    assert main(["summarize", str(p)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_corrupt_page_is_a_clean_error(tmp_path, capsys):
    data = bytearray((nsys_trace("nsys2024.5_a100_cloverleaf.sqlite")).read_bytes())
    data[1641033 : 1641033 + 64] = b"\xff" * 64
    p = tmp_path / "corrupt.sqlite"
    p.write_bytes(bytes(data))
    code = main(["summarize", str(p), "--no-cache"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == 0 or (code == 2 and "corrupt.sqlite" in err)


def test_impossible_nvtx_values_exit_2(tmp_path, capsys):
    p = tmp_path / "s.json"
    p.write_text(
        '{"gpu_activity_span_s": 1, "gpu_busy_union_s": 0, "kernel_count": 1, '
        '"nvtx": {"r": {"count": 1, "sum_s": 1, "union_s": 50, "gpu_overlap_s": 100}}}'
    )
    assert main(["summarize", str(p)]) == 2
    assert "need gpu_overlap_s <= union_s <= sum_s" in capsys.readouterr().err


def test_summarize_imports_only_what_it_uses(tmp_path):
    """The parser of ``summarize`` leaves out the findings rules; nothing of the dashboard, figures or Dask loads."""
    code = (
        "import sys; from dashboard.cli import main; rc = main(['summarize', sys.argv[1], '-o', sys.argv[2], "
        "'--no-cache']); bad = sorted(m for m in sys.modules if m.startswith(('plotly', 'dash.', 'dask', "
        "'distributed', 'dashboard.analysis.findings', 'dashboard.app', 'dashboard.figures')) or m in ('dash', "
        "'dashboard.render')); print(rc, bad, file=sys.stderr)"
    )
    trace = nsys_trace("nsys2025.5_rtx3060_cuda_graph_launch.sqlite")
    proc = subprocess.run(
        [sys.executable, "-c", code, str(trace), str(tmp_path / "s.json")], capture_output=True, text=True, timeout=120
    )
    assert proc.stderr.strip().splitlines()[-1] == "0 []"
    assert json.loads((tmp_path / "s.json").read_text())["kernel_count"] == 3


def test_findings_and_help_still_parse_with_the_full_parser(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "findings" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["findings", "--help"])
    assert "gpu-starv" in capsys.readouterr().out


def test_a_warm_summarize_answers_from_the_cache_without_importing_pandas(tmp_path):
    cache = tmp_path / "cache"
    trace = SAMPLES / "generated_seed_shaped_108k.sqlite"
    run = [
        sys.executable,
        "-c",
        "import sys; from dashboard.cli import main; rc = main(sys.argv[1:]); "
        "print(rc, 'pandas' in sys.modules, file=sys.stderr)",
        "summarize",
        str(trace),
        "--cache-dir",
        str(cache),
    ]
    cold = subprocess.run(run, capture_output=True, text=True, check=True)
    warm = subprocess.run(run, capture_output=True, text=True, check=True)
    assert cold.stderr.splitlines()[-1] == "0 True" and warm.stderr.splitlines()[-1] == "0 False"
    assert warm.stdout == cold.stdout and json.loads(warm.stdout)["kernel_count"] == 108_000
    (tmp_path / "w.sqlite").write_bytes(trace.read_bytes())
    (tmp_path / "w.sqlite-wal").write_bytes(b"x")  # being written: refused before the cache is asked
    run[4] = str(tmp_path / "w.sqlite")
    busy = subprocess.run(run, capture_output=True, text=True)
    assert (
        busy.returncode == 0
        and busy.stderr.splitlines()[-1] == "2 False"
        and "another program is writing" in busy.stderr
    )


@pytest.mark.parametrize(
    "argv, said",
    [
        (["summarize", "--bogus"], "tracedash summarize: error: unrecognized arguments: --bogus"),
        (["--bogus"], "tracedash: error: unrecognized arguments: --bogus"),
        (["summarize", "--outp", "x", "--bogus", "t"], "tracedash summarize: error: unrecognized arguments: --bogus"),
        (["diff", "--bogus=3", "a", "b"], "tracedash diff: error: unrecognized arguments: --bogus=3"),
        (["findings", "-z", "t"], "tracedash findings: error: unrecognized arguments: -z"),
        # a missing trace or command is still named when every option is known
        (["summarize", "--json"], "tracedash summarize: error: the following arguments are required: trace"),
        ([], "tracedash: error: the following arguments are required: command"),
    ],
)
def test_an_unknown_option_is_named_before_a_missing_argument(capsys, argv, said):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == said


def test_known_options_in_every_spelling_still_reach_the_command(tmp_path, capsys):
    """Abbreviations, -oVALUE, --opt=value, a value after its option and negative sizes are options argparse
    takes: none is called unknown."""
    out = tmp_path / "s.json"
    assert main(["summarize", f"-o{out}", "--no-c", str(SEED)]) == 0
    assert json.loads(out.read_text())
    assert main(["summarize", "--output", str(out), "--dispatch-prefix=CG_DISPATCH", str(SEED)]) == 0
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--memory-limit", "-1G", str(SEED)])
    assert exc.value.code == 2 and "not a size: '-1G'" in capsys.readouterr().err


def test_serve_finds_the_bundled_samples_from_any_folder(tmp_path, monkeypatch):
    """QA: from another folder `tracedash serve` said "no sample_traces/ folder found" (it looked in dashboard/)."""
    from dashboard.cli.args import default_trace_dir

    monkeypatch.chdir(tmp_path)
    assert default_trace_dir() == SAMPLES.resolve()
    (tmp_path / "sample_traces").mkdir()
    assert default_trace_dir() == tmp_path / "sample_traces"


def test_inspect_and_summarize_word_a_cut_sqlite_header_alike(tmp_path, capsys):
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"SQLite format 3")  # the header's text, cut before its NUL byte
    said = []
    for command in ("inspect", "summarize"):
        assert main([command, str(path), "--no-cache"] if command == "summarize" else [command, str(path)]) == 2
        said.append(capsys.readouterr().err)
    assert (
        said[0]
        == said[1]
        == (
            "tracedash: error: h.sqlite: starts like a SQLite database but its header is cut or damaged (15 bytes: a "
            "SQLite file is at least 512); export the nsys report again: nsys export --type sqlite REPORT.nsys-rep\n"
        )
    )


def test_the_help_names_every_group_a_step_rule_may_use():
    from dashboard.analysis.step_presets import RULE_GROUPS
    from dashboard.cli.args import STEPS_HELP

    assert f"named groups ({', '.join(RULE_GROUPS)}) for any other server" in STEPS_HELP


def test_export_and_report_keep_their_frames_in_the_cache_folder_named(tmp_path):
    from dashboard.cli.args import _cache
    from dashboard.cli.parser import build_parser

    from paths import nsys_trace

    cache = tmp_path / "cache"
    for command in ("export", "report"):  # both load through _load_for_view, which takes the folder from _cache
        args = build_parser().parse_args([command, "t.sqlite", "-o", "x", "--cache-dir", str(cache)])
        assert _cache(args).root == cache and _cache(args).enabled
    trace = nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite")  # a report draws no image: no browser to start
    assert main(["report", str(trace), "-o", str(tmp_path / "x.html"), "--cache-dir", str(cache)]) == 0
    from dashboard.data.cache import CACHE_FORMAT

    assert [p.name for p in cache.iterdir()] == [f"v{CACHE_FORMAT}"]  # the format's folder, the trace's frames in it
    assert any(p.suffix == ".parquet" for p in cache.rglob("*"))


def test_a_cache_folder_that_cannot_be_used_is_one_warning_line(tmp_path, capsys):
    # QA: `report --cache-dir FILE` printed Python's "cache.py:167: RuntimeWarning: ..." and its source line, 3 times
    from paths import nsys_trace

    not_a_folder = tmp_path / "cd.png"
    not_a_folder.write_text("x")
    trace = nsys_trace("nsys2022.4_cpu_llm_server_nvtx.sqlite")
    assert main(["report", str(trace), "--cache-dir", str(not_a_folder), "-o", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "warning" in line] == [
        f"tracedash: warning: cache disabled: cannot write to {not_a_folder} (Not a directory)"
    ]


def test_a_light_commands_usage_error_names_every_subcommand(capsys):
    """The parser of a command other than findings leaves findings' rules unimported, yet its usage line names it."""
    from dashboard.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["cache", "info", "x"])
    assert exc.value.code == 2
    assert "{summarize,serve,inspect,export,report,cache,diff,findings,steps}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "data, message",
    [
        (b'{"a": 1}', "j.sqlite: a JSON file in none of the formats tracedash reads"),
        (b"", "j.sqlite: the file is empty (0 bytes)\n"),
        (b"hello", "j.sqlite: not a SQLite database (no 'SQLite format 3' header)"),
    ],
)
def test_inspect_tells_a_bad_sqlite_name_what_every_command_tells_it(tmp_path, capsys, data, message):
    """QA: inspect called a JSON file named .sqlite "not a SQLite database", and added ", not an nsys SQLite
    export" to an empty one, where summarize, findings, steps, serve and the upload named the JSON."""
    bad = tmp_path / "j.sqlite"
    bad.write_bytes(data)
    said = []
    for command in ("inspect", "summarize", "findings", "steps"):
        assert main([command, str(bad), "--no-cache"]) == 2
        said.append(capsys.readouterr().err)
    assert said[0].startswith(f"tracedash: error: {message}") and len(set(said)) == 1, said


# A global whose __del__ speaks: it runs in the interpreter's teardown, which the quick exit skips; the atexit
# handler runs either way.
EXIT_PROBE = (
    "import atexit, sys\n"
    "class Torn:\n"
    "    def __del__(self): print('torn down', flush=True)\n"
    "torn = Torn()\n"
    "atexit.register(lambda: print('atexit ran', flush=True))\n"
    "sys.argv = ['tracedash', *sys.argv[1:]]\n"
    "from dashboard.cli import entry\n"
    "entry()\n"
)


@pytest.mark.parametrize(
    ("args", "quick"),
    [
        (["summarize", str(NCCL), "--no-cache", "-o", "{out}"], True),
        (["inspect", str(NCCL)], True),
        (["summarize", "{tmp}/missing.sqlite"], True),  # an error exits quickly too, with its code
        (["cache", "--cache-dir", "{tmp}/c", "info"], False),
    ],
)
def test_a_one_shot_command_exits_without_teardown_after_its_handlers_and_answer(tmp_path, args, quick):
    out = tmp_path / "s.json"
    argv = [a.format(out=out, tmp=tmp_path) for a in args]
    proc = subprocess.run([sys.executable, "-c", EXIT_PROBE, *argv], capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    assert lines[-1 if quick else -2] == "atexit ran", proc.stdout
    assert ("torn down" in lines) is not quick, proc.stdout
    if args[0] == "summarize" and "{out}" in args:
        assert proc.returncode == 0 and json.loads(out.read_text())["kernel_count"] == 4_010
    elif "missing" in args[1]:
        assert proc.returncode == 2 and proc.stderr.startswith("tracedash: error:") and "Traceback" not in proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr


def test_the_quick_exit_waits_for_a_running_thread():
    import threading

    from dashboard.cli import _quick_exit

    writer = threading.Thread(target=lambda: None, name="cache-write")  # alive as far as the check is told
    writer.is_alive = lambda: True
    assert _quick_exit(0, threads=[threading.main_thread(), writer]) is None  # returned: Python's own exit follows


def test_an_answer_that_cannot_be_written_is_not_left_for_a_quick_exit(monkeypatch):
    import io

    from dashboard.cli import _quick_exit

    class Full(io.StringIO):
        def flush(self):
            raise OSError(28, "No space left on device")

    import types

    monkeypatch.delitem(sys.modules, "distributed", raising=False)  # nothing else keeps the quick exit back
    monkeypatch.setitem(sys.modules, "multiprocessing", types.SimpleNamespace(active_children=lambda: []))
    monkeypatch.setattr(sys, "stdout", Full())
    assert _quick_exit(0, threads=[]) is None  # returned: Python's own exit reports the failed write

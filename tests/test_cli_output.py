"""Where a command's answer goes: all of it to stdout or an error, files replaced whole or not at all, messages on
a stderr that cannot take them dropped, never the answer."""

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.cli import args as cli_args
from dashboard.cli import main
from dashboard.cli.args import _say, write_answer, write_file
from dashboard.errors import TraceError

from paths import DATA, SAMPLES, nsys_trace

NCCL = SAMPLES / "nsys2026.2_2gpu_nccl_before.sqlite"
NCCL_AFTER = nsys_trace("nsys2026.2_2gpu_nccl_after.sqlite")
WARNED = DATA / "cases" / "c10.sqlite"  # small, with two warnings


def _stdout_to_pipe(monkeypatch):
    r, w = os.pipe()
    monkeypatch.setattr(sys, "stdout", open(w, "w", encoding="utf-8"))  # noqa: SIM115 - closed by the test
    return r


def test_an_answer_written_a_few_bytes_at_a_time_arrives_whole(monkeypatch):
    r = _stdout_to_pipe(monkeypatch)
    real_write = os.write
    monkeypatch.setattr(cli_args.os, "write", lambda fd, data: real_write(fd, bytes(data[:5])))  # short writes
    sys.stdout.write("head ")  # what the text layer held before is written first
    write_answer("µs answer\n")
    sys.stdout.close()
    assert os.read(r, 100).decode() == "head µs answer\n"
    os.close(r)


def test_a_full_disk_under_stdout_is_an_error_not_a_short_answer(monkeypatch):
    r = _stdout_to_pipe(monkeypatch)

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cli_args.os, "write", full)
    with pytest.raises(TraceError, match=r"^cannot write the answer to standard output \(No space left on device\)$"):
        write_answer("x" * 100)
    monkeypatch.setattr(cli_args.os, "write", lambda fd, data: (_ for _ in ()).throw(BrokenPipeError()))
    with pytest.raises(BrokenPipeError):  # the reader left: the command ends quietly (cli._run)
        write_answer("x")
    os.close(r)


def test_a_closed_stdout_is_one_line_and_exit_2():
    proc = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -m dashboard summarize "{NCCL}" --no-cache >&-'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = "tracedash: error: cannot write the answer: standard output is closed\n"
    assert (proc.returncode, proc.stderr) == (2, said)


def test_warnings_that_stderr_cannot_take_are_dropped_and_the_answer_still_written(tmp_path):
    out = tmp_path / "s.json"
    with open("/dev/full", "w") as full, open(out, "w") as answer:
        proc = subprocess.run(
            [sys.executable, "-m", "dashboard", "summarize", str(WARNED), "--no-cache"],
            stdout=answer,
            stderr=full,
            timeout=120,
        )
    assert proc.returncode == 0 and json.loads(out.read_text())["kernel_count"] == 5
    proc = subprocess.run(
        ["bash", "-c", f'"{sys.executable}" -m dashboard summarize "{WARNED}" --no-cache 2>&-'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["kernel_count"] == 5  # no warning inside it


def test_say_drops_a_line_a_closed_or_failing_stream_cannot_take():
    class Failing:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    _say("lost", file=None)  # stderr closed: sys.stderr is None
    _say("lost", file=Failing())


def test_the_diff_gate_decides_the_exit_code_when_the_reader_has_left(monkeypatch, capsys):
    def gone(text):
        raise BrokenPipeError

    monkeypatch.setattr(sys, "stdout", sys.stdout)  # restored after reader_left replaces it
    monkeypatch.setattr("dashboard.cli.compare.write_answer", gone)
    assert main(["diff", "--fail-if-slower", "1", str(NCCL), str(NCCL_AFTER), "--no-cache"]) == 3
    assert "is 2.29 % slower than baseline" in capsys.readouterr().err


def test_a_file_that_cannot_be_written_whole_keeps_its_earlier_content(tmp_path, monkeypatch):
    target = tmp_path / "keep.json"
    target.write_text('{"old": true}\n')
    real_fdopen = os.fdopen

    class FillsUp:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def fileno(self):
            return self.f.fileno()

        def write(self, text):
            self.f.write(text[:10])
            self.f.flush()
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cli_args.os, "fdopen", lambda fd, *a, **k: FillsUp(real_fdopen(fd, *a, **k)))
    with pytest.raises(TraceError, match=r"keep\.json: cannot write \(No space left on device\)$"):
        write_file(target, '{"new": "a longer answer"}\n')
    assert target.read_text() == '{"old": true}\n' and [p.name for p in tmp_path.iterdir()] == ["keep.json"]


def test_a_written_file_has_the_modes_a_plain_write_would_give_it(tmp_path):
    fresh = tmp_path / "new.json"
    write_file(fresh, "{}\n")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~mask and fresh.read_text() == "{}\n"
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    kept.chmod(0o640)
    write_file(kept, "new")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() == "new"
    link = tmp_path / "link.json"
    link.symlink_to(kept)
    write_file(link, "through the link")
    assert link.is_symlink() and kept.read_text() == "through the link"


def test_a_device_is_written_to_not_replaced():
    write_file(Path(os.devnull), "nothing")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_an_image_is_written_as_its_bytes(tmp_path):
    image = tmp_path / "t.png"
    image.write_bytes(b"old")
    write_file(image, b"\x89PNG\r\n\x1a\n\x00")  # `export -o`: replaced whole, never decoded
    assert image.read_bytes() == b"\x89PNG\r\n\x1a\n\x00"

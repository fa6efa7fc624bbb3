"""`reins eval --scripted` as real processes: every built-in task passes against its scripted
turns (each through `reins exec`'s entry function, on the real fake HTTP model server with
the real anthropic client); the many-tools set with and without find_tools; tasks that fail
on purpose get the right causes; `--compare`; bad usage."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil
import pytest

from kernel.cli.main import main as cli_main
from kernel.eval.scoring import metrics, results_from_dict
from kernel.eval.task import builtin_tasks_dir, discover
from kernel.fakemodel import FakeAnthropicServer, reply

ROOT = Path(__file__).resolve().parents[2]
REINS = str(Path(sys.executable).with_name("reins"))
FAILING = Path(__file__).parent / "failing"
CATEGORIES = {"single-tool", "multi-step", "parameter-conversion", "no-tool", "harness"}


def start(out: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return subprocess.Popen([REINS, "eval", "--scripted", "--json", str(out), *args], env=env,
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)


def part(run: dict[str, Any], folder: Path, name: str) -> dict[str, Any]:
    """The results of one folder's tasks out of a run over several (as its own file)."""
    names = {p.name for p in folder.iterdir() if (p / "task.toml").is_file()}
    data = {**run["data"], "tasks": [t for t in run["data"]["tasks"] if t["name"] in names]}
    data["metrics"] = asdict(metrics(results_from_dict(data)))
    file = run["file"].with_name(f"{name}.json")
    file.write_text(json.dumps(data))
    return {**run, "data": data, "file": file}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two runs at once (each two tasks at a time): the built-in tasks, the many-tools set
    and the failing tasks (`--tasks` twice); the many-tools set without find_tools."""
    tmp = tmp_path_factory.mktemp("eval")
    plan = {
        "main": ["--tasks", "eval/*/*", "--tasks", str(FAILING)],
        "many_off": ["--tasks", "eval/many-tools", "--set", "tool_search_threshold=1000"],
    }
    procs = {name: (start(tmp / f"{name}.json", *args), tmp / f"{name}.json")
             for name, args in plan.items()}
    done: dict[str, Any] = {}
    for name, (proc, out) in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        done[name] = {"code": proc.returncode, "stdout": stdout, "stderr": stderr,
                      "file": out, "data": json.loads(out.read_text()) if out.exists() else None}
    done["builtin"] = part(done["main"], ROOT / "eval" / "tasks", "builtin")
    done["many_on"] = part(done["main"], ROOT / "eval" / "many-tools", "many_on")
    done["failing"] = part(done["main"], FAILING, "failing")
    yield done


def test_every_builtin_task_passes_against_its_scripted_turns(runs: dict[str, Any]) -> None:
    run = runs["builtin"]
    assert run["code"] == 1, run["stdout"] + run["stderr"]  # the failing tasks ran too
    data = run["data"]
    tasks = discover(None)
    many = discover([str(ROOT / "eval" / "many-tools")])
    assert len(runs["main"]["data"]["tasks"]) == len(tasks) + len(many) + 5
    assert len(tasks) >= 30 and {t.category for t in tasks} >= CATEGORIES
    assert [t["name"] for t in data["tasks"]] == [t.name for t in tasks]
    assert [t["name"] for t in data["tasks"] if not t["passed"]] == []
    metrics = data["metrics"]
    assert metrics["completion_rate"] == 1.0 and metrics["failure_causes"] == {}
    assert metrics["tool_selection_accuracy"] == 1.0
    # the scripted model sends one invalid call (absorb-invalid-arguments), so arguments
    # are valid in all but that run
    invalid = [t["name"] for t in data["tasks"] if t["args_ok"] is False]
    assert invalid == ["absorb-invalid-arguments"]
    assert metrics["avg_rounds"] > 1
    # the fake server's token counts are not a measurement: not averaged, marked per task
    assert metrics["avg_tokens"] is None and metrics["avg_cost_usd"] is None
    assert {t["measured"] for t in data["tasks"]} == {False}
    assert "tokens and cost not measured (scripted)" in run["stdout"]
    # the progress went to stderr, one line per run, the table to stdout
    total = len(runs["main"]["data"]["tasks"])
    assert run["stderr"].count("] ") >= total and f"[{total}/{total}]" in run["stderr"]
    assert "absorb-overloaded-api" in run["stdout"]


def test_many_tools_with_find_tools_keep_selection_and_shrink_requests(
        runs: dict[str, Any]) -> None:
    on, off = runs["many_on"], runs["many_off"]
    assert off["code"] == 0, off["stdout"] + off["stderr"]
    for run in (on, off):
        assert run["data"]["metrics"]["tool_selection_accuracy"] == 1.0
        assert run["data"]["metrics"]["completion_rate"] == 1.0
    by_on = {t["name"]: t for t in on["data"]["tasks"]}
    by_off = {t["name"]: t for t in off["data"]["tasks"]}
    for name, task in by_off.items():
        assert task["tools_offered"] >= 133, name  # 8 built-in + 125 generated (+ 2 real)
        assert "find_tools" not in task["tools_called"]
        assert by_on[name]["tools_offered"] <= 20
        assert by_on[name]["request_bytes"] * 2 < task["request_bytes"], name
        needed_a_tool = name != "no-tool-arithmetic"
        assert ("find_tools" in by_on[name]["tools_called"]) is needed_a_tool
        assert by_on[name]["rounds"] == task["rounds"] + needed_a_tool
    assert on["data"]["metrics"]["avg_request_bytes"] * 2 < \
        off["data"]["metrics"]["avg_request_bytes"]


def test_tasks_that_fail_on_purpose_get_their_causes(runs: dict[str, Any]) -> None:
    run = runs["failing"]
    causes = {t["name"]: t["failure_cause"] for t in run["data"]["tasks"]}
    assert causes == {"api-down": "api_error", "over-limit": "limit",
                      "tool-when-none": "tool_when_none", "wrong-tool": "wrong_tool",
                      "unapproved-tool-when-none": "tool_when_none"}
    assert run["data"]["metrics"]["failure_causes"] == {
        "api_error": 1, "limit": 1, "tool_when_none": 2, "wrong_tool": 1}
    unapproved = next(t for t in run["data"]["tasks"] if t["name"] == "unapproved-tool-when-none")
    assert "denied: run_command" in unapproved["failures"]  # the approval was missing too
    assert run["data"]["metrics"]["completion_rate"] == 0.0
    assert "FAILED" in run["stdout"] and "failures:" in run["stdout"]
    assert "wrong-tool: not called: read_file (called: grep)" in run["stdout"]


def reins(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`reins ARGS` through the console script's entry function, in this process."""
    try:
        code = cli_main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_compare_shows_each_task_and_the_metric_differences(
        runs: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = reins(capsys, "eval", "--compare", str(runs["many_off"]["file"]),
                           str(runs["many_on"]["file"]))
    assert code == 0, err
    lines = out.splitlines()
    assert any(line.startswith("weather-fahrenheit") and "+1.0" in line for line in lines)
    assert any(line.startswith("avg_request_bytes") and " -" in line for line in lines)
    assert any(line.startswith("completion_rate") and "+0 pts" in line for line in lines)
    assert "0 of 7 tasks changed" in out
    code, mixed, err = reins(capsys, "eval", "--compare", str(runs["failing"]["file"]),
                             str(runs["builtin"]["file"]))
    assert code == 0, err
    assert "wrong_tool 1→0" in mixed and "api_error 1→0" in mixed
    assert any(line.startswith("wrong-tool") and "failed (wrong_tool)" in line and "—" in line
               for line in mixed.splitlines())


@pytest.mark.parametrize(("args", "message"), [
    (["--tasks", "/nonexistent/tasks"], "no tasks"),
    (["--compare", "/nonexistent/a.json", "/nonexistent/b.json"], "a.json"),
    (["--repeat", "0"], "at least 1"),
    (["--set", "novalue"], "KEY=JSON"),
    (["--set", "x={bad"], "not JSON"),
])
def test_bad_usage_exits_2_with_a_message(args: list[str], message: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = reins(capsys, "eval", *args)
    assert code == 2
    assert message in err


def test_a_bad_task_file_is_refused_naming_the_key(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "task.toml").write_text('prompt = "x"\n[expect]\ntool = ["read_file"]\n')
    code, _, err = reins(capsys, "eval", "--tasks", str(tmp_path))
    assert code == 2
    assert "expect.tool: unknown key" in err and "task.toml" in err


def test_scripted_needs_scripts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "task.toml").write_text('prompt = "x"\n')
    code, _, err = reins(capsys, "eval", "--scripted", "--tasks", str(tmp_path / "t"))
    assert code == 2 and "no scripted turns: t" in err


def test_the_builtin_suite_lives_in_the_source_tree() -> None:
    assert builtin_tasks_dir() == ROOT / "eval" / "tasks"


def test_repeat_runs_every_task_n_times(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    code, table, err = reins(capsys, "eval", "--scripted", "--repeat", "3", "--jobs", "1",
                             "--tasks", str(ROOT / "eval" / "tasks" / "none-greeting"),
                             "--json", str(out))
    assert code == 0, err
    data = json.loads(out.read_text())
    assert [t["name"] for t in data["tasks"]] == ["none-greeting"] * 3
    assert data["repeat"] == 3 and data["metrics"]["tasks"] == 3
    assert [line.split()[0] for line in err.splitlines()] == ["[1/3]", "[2/3]", "[3/3]"]
    assert table.count("none-greeting") == 3


def test_against_an_endpoint_with_the_users_model_settings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Without --scripted: the user's base_url (their settings.json) and key reach every
    task's fresh REINS_HOME; a model that never calls a tool passes the no-tool task and
    fails the lookup with `no_tool`."""
    home = tmp_path / "user-home"
    (home / "config").mkdir(parents=True)
    with FakeAnthropicServer(responder=lambda body: reply("Hello, I am an assistant."),
                             api_key="user-key") as server:
        (home / "config" / "settings.json").write_text(json.dumps(
            {"base_url": server.base_url, "model": "settings-model"}))
        monkeypatch.setenv("REINS_HOME", str(home))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "user-key")
        monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
        out = tmp_path / "real.json"
        tasks = ROOT / "eval" / "tasks"
        code, _, err = reins(capsys, "eval", "--tasks", str(tasks / "none-greeting"),
                             "--tasks", str(tasks / "lookup-read-file"), "--json", str(out))
        models = {r.body["model"] for r in server.requests}
    assert code == 1, err
    causes = {t["name"]: t["failure_cause"] for t in json.loads(out.read_text())["tasks"]}
    assert causes == {"none-greeting": None, "lookup-read-file": "no_tool"}
    assert models == {"settings-model"} and len(server.requests) == 2
    assert not list((home / "data").glob("**/*.sqlite3"))  # the user's own data untouched


def test_keep_leaves_each_run_s_workspace_and_home(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    keep = tmp_path / "kept"
    task = ROOT / "eval" / "tasks" / "multi-edit-config"
    code, _, err = reins(capsys, "eval", "--scripted", "--tasks", str(task), "--keep",
                         str(keep), "--set", "tool_search_threshold=7")
    assert code == 0, err
    (run,) = keep.iterdir()
    assert "port = 9090" in (run / "workspace" / "config.ini").read_text()
    assert "port = 8080" in (task / "workspace" / "config.ini").read_text()  # fixture intact
    assert json.loads((run / "home" / "config" / "settings.json").read_text()) == {
        "tool_search_threshold": 7}
    assert (run / "home" / "data" / "reins.sqlite3").is_file()


def test_an_eval_stopped_while_every_worker_runs_leaves_no_process(tmp_path: Path) -> None:
    # Each worker is mid-run (its command, a child of the worker, sleeping) when the eval
    # gets SIGTERM: the runs cancel, then the workers end instead of waiting for more work.
    suite = tmp_path / "suite"
    for name in ("slow-a", "slow-b"):
        shutil.copytree(ROOT / "eval" / "tasks" / "absorb-timeout", suite / name)
        toml = suite / name / "task.toml"
        toml.write_text(toml.read_text().replace("timeout_s = 1", "timeout_s = 60"))
    process = start(tmp_path / "out.json", "--tasks", str(suite), "--jobs", "2")
    try:
        deadline = time.monotonic() + 60
        busy: list[psutil.Process] = []  # workers running a command (not the tracker)
        while len(busy) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
            busy = [w for w in psutil.Process(process.pid).children() if w.children()]
        assert len(busy) == 2, busy
        tree = psutil.Process(process.pid).children(recursive=True)
        process.terminate()
        process.wait(30)
        _, alive = psutil.wait_procs(tree, timeout=30)
        assert alive == []
    finally:
        process.kill()
        process.communicate()
    assert not (tmp_path / "out.json").exists()

"""Message levels and progress bars (kforge.log): flags over $KFORGE_LOG_LEVEL, passed on to child processes;
quiet turns bars off; the C++ command's --quiet / --verbose reach its Python through the environment."""
import argparse
import logging
import os
import subprocess
import sys

import pytest

from kforge import log


def parsed(*argv):
    p = argparse.ArgumentParser()
    log.add_arguments(p)
    return p.parse_args(list(argv))


def test_flags_set_the_level_and_pass_it_on(monkeypatch):
    monkeypatch.setenv(log.LEVEL_ENV, "verbose")
    assert log.configure(parsed("--quiet")) == "quiet"
    assert log.logger.level == logging.WARNING and os.environ[log.LEVEL_ENV] == "quiet" and log.quiet()
    assert list(log.progress(range(3), "problems")) == [0, 1, 2]
    assert log.progress(range(3), "problems").disable, "no bar when quiet"
    assert log.configure(parsed("-v")) == "verbose" and log.logger.level == logging.DEBUG and not log.quiet()
    monkeypatch.setenv(log.LEVEL_ENV, "info")
    assert log.configure(parsed()) == "info"
    with pytest.raises(SystemExit):
        parsed("-q", "-v")  # one or the other


def test_the_environment_sets_the_level_without_flags(monkeypatch):
    monkeypatch.setenv(log.LEVEL_ENV, "quiet")
    assert log.configure(None) == "quiet"
    monkeypatch.setenv(log.LEVEL_ENV, "loud")
    with pytest.raises(SystemExit, match="KFORGE_LOG_LEVEL must be one of quiet, info, verbose"):
        log.configure(None)
    monkeypatch.setenv(log.LEVEL_ENV, "info")
    log.configure(None)


def test_messages_go_to_stderr_and_results_to_stdout():
    code = ("from kforge import log; log.configure(None); log.logger.info('a notice'); log.logger.debug('a detail'); "
            "log.say('| a row |')")
    env = {**os.environ, log.LEVEL_ENV: "info", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout == "| a row |\n" and done.stderr == "kforge: a notice\n", (done.stdout, done.stderr)
    env[log.LEVEL_ENV] = "quiet"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout == "| a row |\n" and done.stderr == ""

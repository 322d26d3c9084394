"""The grader's end of a kernel connection (grader/kernel_client.py), without a kernel: the wait
that gives up on a kernel gone silent, and the client whose heartbeat never pings. The tamper
tests (test_tamper.py) meet both through real grading."""

import asyncio
import time

import pytest
from nbclient.exceptions import DeadKernelError

from grader import kernel_client


class _Waiting:
    """Stands for nbclient's executor: each wait gives the next of `replies` (None: the time
    limit passed with no reply); its kernel manager records each shutdown."""

    def __init__(self, replies):
        self.replies, self.shutdowns = list(replies), []
        self.km = self

    async def async_wait_for_reply(self, msg_id, cell=None):
        return self.replies.pop(0)

    def shutdown_kernel(self, now=False):
        self.shutdowns.append(now)


class _Executor(kernel_client.StopsASilentKernel, _Waiting):
    pass


def _waits(executor, times):
    return [asyncio.run(executor.async_wait_for_reply(f"msg-{k}")) for k in range(times)]


def test_a_kernel_that_answers_between_time_limits_is_kept():
    executor = _Executor([None, {"ok": 1}, None, {"ok": 2}, {"ok": 3}])
    assert _waits(executor, 5) == [None, {"ok": 1}, None, {"ok": 2}, {"ok": 3}]
    assert executor.shutdowns == [] and executor.timeouts_in_a_row == 0


def test_two_time_limits_in_a_row_shut_the_kernel_down_at_once_and_end_the_notebook():
    executor = _Executor([{"ok": 1}, None, None, {"ok": 2}])
    assert _waits(executor, 2) == [{"ok": 1}, None] and executor.shutdowns == []
    with pytest.raises(DeadKernelError, match="^the kernel stopped answering$"):
        asyncio.run(executor.async_wait_for_reply("msg-3"))
    assert executor.shutdowns == [True]


def test_the_grading_client_is_jupyters_with_a_heartbeat_that_never_pings():
    from jupyter_client.asynchronous import AsyncKernelClient
    client = kernel_client.GradingKernelClient
    assert issubclass(client, AsyncKernelClient) and client is kernel_client.GradingKernelClient  # made once
    heartbeat = client().hb_channel_class(address="tcp://127.0.0.1:9")  # a port nothing listens on
    heartbeat.start()
    deadline = time.monotonic() + 10
    while not heartbeat.is_beating() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(1.5)  # jupyter_client's own gives up on a port with no kernel within a second
    assert heartbeat.is_beating() and heartbeat._running  # still beating, with no kernel to ping
    heartbeat.stop()  # returns: the thread ends when told
    assert not heartbeat.is_alive()
    with pytest.raises(AttributeError, match="^NoSuchClient$"):
        kernel_client.NoSuchClient

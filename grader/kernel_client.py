"""The grader's end of a kernel connection, made to survive a submission that breaks its own: a
client without a heartbeat, and an executor's wait that gives up on a kernel gone silent. nbgrader
is given the client by name (grader.nbconfig); the judge's executor mixes in the wait."""

import functools


class StopsASilentKernel:
    """Mixed into nbclient's executor: a kernel that lets two requests in a row run past the time
    limit, the interrupt after the first one included, has stopped answering (a submission can
    break its own connection): it is shut down, and the notebook ends there, instead of every
    later cell and check waiting out the limit in turn."""

    timeouts_in_a_row = 0

    async def async_wait_for_reply(self, msg_id, cell=None):
        from jupyter_core.utils import ensure_async
        from nbclient.exceptions import DeadKernelError
        reply = await super().async_wait_for_reply(msg_id, cell)
        self.timeouts_in_a_row = 0 if reply is not None else self.timeouts_in_a_row + 1
        if self.timeouts_in_a_row >= 2:
            await ensure_async(self.km.shutdown_kernel(now=True))
            raise DeadKernelError("the kernel stopped answering")
        return reply


@functools.cache
def _kernel_client():
    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.channels import HBChannel
    from traitlets import Type

    class NoHeartbeat(HBChannel):
        """A heartbeat channel that never pings: a ping to a kernel that broke its end of the
        connection waits for ever, and the grader with it. Whether the kernel lives is its
        process's to say (the kernel manager asks it)."""

        def run(self):
            self._running = self._beating = True
            self._exit.wait()

    class GradingKernelClient(AsyncKernelClient):
        """jupyter_client's, without the heartbeat (see NoHeartbeat)."""

        hb_channel_class = Type(NoHeartbeat)

    return GradingKernelClient


def __getattr__(name):  # jupyter_client is imported only when asked for
    if name == "GradingKernelClient":
        return _kernel_client()
    raise AttributeError(name)

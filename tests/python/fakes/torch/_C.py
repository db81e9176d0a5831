"""Stand-in for torch._C: the allocator's OOM observers and its history flag.

As in the real allocator, attaching an observer before CUDA is initialised does nothing (the
per-device allocators do not exist yet); ``attached_early`` counts such calls. Asking whether
history is recorded before then kills the process, as the real query's segmentation fault did."""
import sys

observers = []
attached_early = 0


def _cuda_attach_out_of_memory_observer(fn):
    global attached_early
    if not sys.modules["torch.cuda"]._allocator_ready:
        attached_early += 1
        return
    observers.append(fn)


def _cuda_isHistoryEnabled():
    cuda = sys.modules["torch.cuda"]
    if not (cuda._allocator_ready or cuda._initialized):  # initialised: the allocator exists
        __import__("os").abort()  # the real one crashes the process (H100, torch 2.11)
    return sys.modules["torch.cuda.memory"]._history is not None

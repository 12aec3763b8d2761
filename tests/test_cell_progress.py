"""The progress reader of long cells (issue 38) on the messages a kernel sends: tqdm's `\\r` redraws
become progress and leave only finished lines as outputs; ipywidgets progress bars are read from
their comm messages (real ones, from a real kernel); events are coalesced."""

from __future__ import annotations

import asyncio

from jupyter_client.manager import AsyncKernelManager

from agent_core.tools.cell_progress import LINE_CHARS, ProgressReader, bar_figures
from jupyter_ext.iopub_outputs import outputs_of_burst, read_widgets, went_idle
from jupyter_ext.kernel_clients import KernelMessage


def stream(text: str, name: str = "stderr") -> dict[str, object]:
    return {"output_type": "stream", "name": name, "text": text}


def test_tqdm_redraws_become_progress_and_only_finished_lines_stay() -> None:
    reader = ProgressReader("c1")
    assert reader.stream(stream("\r  0%|          | 0/200 [00:00<?, ?it/s]")) is None
    first = reader.event()
    assert first is not None and first["percent"] == 0.0 and first["tool_call_id"] == "c1"
    assert reader.stream(stream("\r 45%|####5     | 90/200 [00:09<00:11, 9.8it/s]")) is None
    assert reader.event() is None, "coalesced: not twice within half a second"
    later = reader.event(force=True)
    assert later is not None and later["percent"] == 45.0 and later["eta_s"] == 11.0
    assert "90/200" in later["text"]
    kept = reader.stream(stream("\r100%|##########| 200/200 [00:20<00:00, 9.9it/s]\ndone\n"))
    assert kept == stream("100%|##########| 200/200 [00:20<00:00, 9.9it/s]\ndone\n")
    assert reader.finish() == []


def test_plain_output_passes_untouched_and_a_bar_left_open_is_kept_at_the_end() -> None:
    reader = ProgressReader("c1")
    plain = stream("epoch 1\n", "stdout")
    assert reader.stream(plain) is plain
    assert reader.stream(stream("\rstep 1" + "x" * (3 * LINE_CHARS))) is None
    assert reader.stream(stream("\rstep 2")) is None
    assert reader.finish() == [stream("step 2")]


# A real IntProgress (and an IntSlider, which is no progress) over 5 steps, then a real tqdm loop.
BARS = (
    "from IPython.display import display\n"
    "from ipywidgets import IntProgress, IntSlider\n"
    "from tqdm import tqdm\n"
    "loading, knob = IntProgress(min=0, max=5), IntSlider(value=1)\n"
    "display(loading, knob)\n"
    "for i in range(5):\n"
    "    loading.value = i + 1\n"
    "    knob.value = 90 + i\n"
    "for i in tqdm(range(4), mininterval=0):\n"
    "    pass\n"
    "print('done')\n"
)


async def iopub_of(code: str) -> tuple[str, list[KernelMessage]]:
    """Run `code` in a real kernel: its request's msg_id and every iopub message up to its idle."""
    manager = AsyncKernelManager()
    await manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        msg_id = client.execute(code)
        messages: list[KernelMessage] = []
        while not (messages and went_idle(messages[-1]) and messages[-1]["parent_header"].get("msg_id") == msg_id):
            messages.append(await client.get_iopub_msg(timeout=30))
        return msg_id, messages
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)


def test_real_ipywidgets_and_tqdm_bars_of_a_real_kernel_become_progress() -> None:
    """The server's reading of a cell's iopub messages (jupyter_ext.iopub_outputs), message by
    message, as real ipywidgets and tqdm send them: the widget's percentages, then tqdm's."""
    msg_id, messages = asyncio.run(iopub_of(BARS))
    reader = ProgressReader("c1")
    percents: list[tuple[str, float]] = []
    kept: list[dict[str, object]] = []
    for msg in messages:
        read_widgets(reader, [msg], msg_id)
        outputs, _ = outputs_of_burst([msg], msg_id)
        kept += [o for o in (reader.stream(o) if o["output_type"] == "stream" else o for o in outputs) if o]
        if (event := reader.event(force=True)) is not None and event.get("percent") is not None:
            percents.append(("tqdm" if "it/s" in event["text"] else "widget", event["percent"]))
    kept += reader.finish()
    widget = [p for source, p in percents if source == "widget"]
    bar = [p for source, p in percents if source == "tqdm"]
    assert widget == [0.0, 20.0, 40.0, 60.0, 80.0, 100.0], percents  # the slider's 90..94 are no progress
    assert bar and bar == sorted(bar) and bar[-1] == 100.0, percents
    assert percents.index(("widget", 100.0)) < percents.index(("tqdm", bar[0])), "in the cell's order"
    text = "".join(str(o.get("text", "")) for o in kept)
    assert "\r" not in text and "4/4 [" in text and "done\n" in text, kept  # the bar's last state stays


def test_bar_figures() -> None:
    assert bar_figures(" 7%|7         | 7/100 [01:02<1:13:20, 1.1s/it]") == (7.0, 4400.0)
    assert bar_figures("Downloading 62.5% done") == (62.5, None)
    assert bar_figures("no bar here") == (None, None)

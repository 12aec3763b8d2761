"""The progress reader of long cells (issue 38) on the messages a kernel sends: tqdm's `\\r` redraws
become progress and leave only finished lines as outputs; ipywidgets progress bars are read from
their comm messages; events are coalesced."""

from __future__ import annotations

from agent_core.tools.cell_progress import LINE_CHARS, ProgressReader, bar_figures


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


def test_an_ipywidgets_progress_bar_is_read_from_its_comm_messages() -> None:
    reader = ProgressReader("c1")
    opened = {
        "comm_id": "w1",
        "data": {"state": {"_model_name": "FloatProgressModel", "min": 0, "max": 50, "value": 0}},
    }
    reader.comm("comm_open", opened)
    reader.comm("comm_msg", {"comm_id": "w1", "data": {"method": "update", "state": {"value": 20}}})
    event = reader.event()
    assert event is not None and event["percent"] == 40.0
    other = {"comm_id": "w2", "data": {"state": {"_model_name": "IntSliderModel", "value": 90}}}
    reader.comm("comm_open", other)
    reader.comm("comm_msg", {"comm_id": "w2", "data": {"method": "update", "state": {"value": 99}}})
    assert reader.event(force=True) is None, "a slider is not progress"


def test_bar_figures() -> None:
    assert bar_figures(" 7%|7         | 7/100 [01:02<1:13:20, 1.1s/it]") == (7.0, 4400.0)
    assert bar_figures("Downloading 62.5% done") == (62.5, None)
    assert bar_figures("no bar here") == (None, None)

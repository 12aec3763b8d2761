"""Images of the agent's cells: image parts for an endpoint that takes them; after a 400 for image
parts, the run goes on with the text description and sends no more images in that thread."""

from __future__ import annotations

from typing import Any

from devtools.fake_llm import FakeLLM, error, text, tool_call
from tests.conftest import Api, of_type

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
PLOT = f"from IPython.display import Image, display\ndisplay(Image(data=__import__('base64').b64decode('{PNG}')))"


def image_parts(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        p
        for m in request["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]


async def _plot_run(api: Api, kernel_id: str) -> tuple[str, list[dict[str, Any]]]:
    thread = await api.new_thread()
    await api.run(thread, "plot it", kernel_id=kernel_id)
    first = await api.until_finished(thread)
    await api.approve(thread, "plot")
    return thread, first + await api.until_finished(thread, first[-1]["seq"])


async def test_vision_endpoint_gets_the_image(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    fake_llm.script(tool_call("run_cell", {"code": PLOT}, id="plot"), text("a dot"))
    _, events = await _plot_run(api, notebook_kernel)
    assert events[-1]["status"] == "completed"
    parts = image_parts(fake_llm.requests[-1])
    assert len(parts) == 1 and parts[0]["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    tool = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert "[image: image/png, 1x1 px" in tool["content"] and "images" not in tool


async def test_refused_images_fall_back_to_descriptions(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    def no_images(body: dict[str, Any]) -> Any:
        return (
            error(400, "Invalid content type: image_url is only supported by vision models")
            if image_parts(body)
            else text("described")
        )

    fake_llm.script(tool_call("run_cell", {"code": PLOT}, id="plot"), no_images, no_images, no_images)
    thread, events = await _plot_run(api, notebook_kernel)
    assert events[-1]["status"] == "completed" and of_type(events, "final")[0]["answer"] == "described"
    refused, retried = fake_llm.requests[1], fake_llm.requests[2]
    assert image_parts(refused) and not image_parts(retried)
    assert "[image: image/png, 1x1 px" in str(retried["messages"])
    await api.run(thread, "and now?")
    later = await api.until_finished(thread, events[-1]["seq"])
    assert later[-1]["status"] == "completed" and not image_parts(fake_llm.requests[-1])
    assert len(fake_llm.requests) == 4  # the thread remembered: no more refused attempts

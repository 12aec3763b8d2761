"""Cell images for the model: image parts (OpenAI content parts) for endpoints that take them, a
text description otherwise. A tool message keeps its images under a key of Cellwright's own; what
is sent is decided per request (vision setting, the thread's refusal, the per-request cap)."""

from __future__ import annotations

import base64
import binascii
import io
import struct

from agent_core.json_types import JsonObject, json_object
from agent_core.messages import IMAGES_KEY, ContentPart, Message

IMAGE_MIMES = ("image/png", "image/jpeg")
MAX_IMAGE_BYTES = 400_000  # base64 characters kept per image (after downscaling, when Pillow is there)
MAX_SIDE = 1024
PER_CELL = 3


def _size(mime: str, raw: bytes) -> tuple[int, int] | None:
    if mime == "image/png" and raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        return struct.unpack(">II", raw[16:24])
    if mime == "image/jpeg":
        at = 2
        while at + 9 < len(raw):
            if raw[at] != 0xFF:
                return None
            marker, length = raw[at + 1], struct.unpack(">H", raw[at + 2 : at + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                height, width = struct.unpack(">HH", raw[at + 5 : at + 9])
                return width, height
            at += 2 + length
    return None


def _downscaled(mime: str, raw: bytes) -> bytes:
    """Pillow only if the server already has it: not a dependency for this."""
    try:
        from PIL import Image
    except ImportError:
        return raw
    try:
        image = Image.open(io.BytesIO(raw))
        if max(image.size) <= MAX_SIDE:
            return raw
        image.thumbnail((MAX_SIDE, MAX_SIDE))
        out = io.BytesIO()
        image.save(out, format="PNG" if mime == "image/png" else "JPEG")
        return out.getvalue()
    except Exception:  # a broken image is sent as it is, or described
        return raw


def cell_images(outputs: list[JsonObject]) -> tuple[list[dict[str, str]], list[str]]:
    """The last images of a cell's outputs, bounded, and a description of each image output."""
    images: list[dict[str, str]] = []
    notes: list[str] = []
    for output in outputs:
        if output.get("output_type") not in ("display_data", "execute_result"):
            continue
        data = json_object(output.get("data"))
        for mime in IMAGE_MIMES:
            if mime not in data:
                continue
            value = data[mime]
            encoded = "".join(str(part) for part in value) if isinstance(value, list) else str(value)
            try:
                raw = base64.b64decode(encoded, validate=False)
            except (binascii.Error, ValueError):
                continue
            size = _size(mime, raw)
            text = data.get("text/plain")
            label = ("".join(text) if isinstance(text, list) else str(text or ""))[:200]
            dims = f"{size[0]}x{size[1]} px" if size else "unknown size"
            notes.append(f"[image: {mime}, {dims}, {len(raw)} bytes{f'; {label}' if label else ''}]")
            encoded = base64.b64encode(_downscaled(mime, raw)).decode()
            if len(encoded) <= MAX_IMAGE_BYTES:
                images.append({"mime": mime, "data": encoded})
            break
    return images[-PER_CELL:], notes


def with_image_parts(messages: list[Message], limit: int) -> tuple[list[Message], int]:
    """The messages with the newest `limit` images as user messages of image parts after the tool
    result they belong to (tool messages take text only); how many images went in."""
    budget = limit
    chosen: dict[int, list[dict[str, str]]] = {}
    for index in range(len(messages) - 1, -1, -1):
        images = messages[index].get(IMAGES_KEY) or []
        if budget <= 0:
            break
        if images:
            chosen[index] = images[-budget:]
            budget -= len(chosen[index])
    out: list[Message] = []
    for index, message in enumerate(messages):
        out.append(message)
        if index in chosen:
            parts: list[ContentPart] = [{"type": "text", "text": "The image output of the cell above:"}]
            parts += [
                {"type": "image_url", "image_url": {"url": f"data:{i['mime']};base64,{i['data']}"}}
                for i in chosen[index]
            ]
            out.append({"role": "user", "content": parts})
    return out, limit - budget


def image_tokens(count: int) -> int:
    """What an image costs in the context budget, roughly (a 1024 px tile count of OpenAI's)."""
    return 800 * count

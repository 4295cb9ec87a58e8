"""review23: a bare Vulkan ``ErrorOutOfDeviceMemory`` (no size in the message, as in llama.cpp's
Vulkan issue posts, doctor dev corpus) must not print a placeholder "?" where the size would be."""

from __future__ import annotations

from oomkit.diagnose.doctor import diagnose_text


def test_unsized_vulkan_message_names_a_buffer_not_a_question_mark() -> None:
    d = diagnose_text("Vulkan Device memory allocation failed (ErrorOutOfDeviceMemory )\n")
    assert "Vulkan could not allocate a buffer on" in d.explanation
    assert "allocate ?" not in d.explanation

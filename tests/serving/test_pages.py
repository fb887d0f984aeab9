"""A page's picture is capped in pixels: a huge MediaBox renders at a lower zoom, never a
pixmap of gigabytes; an ordinary page keeps its zoom."""

import struct
import time

import pymupdf
import pytest

from finrag.serving.pages import MAX_PIXELS, MAX_SIDE_PX, PageError, fit_zoom, render_page

PASSAGE = "Revenue for the fiscal year was 5,120 million dollars."


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])  # IHDR: width, height


def make_pdf(path, width: float, height: float) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=width, height=height)
    page.insert_text((72, 144), PASSAGE, fontsize=24)
    doc.save(path)
    doc.close()


def test_a_14400_point_page_renders_within_the_cap_and_fast(tmp_path):
    make_pdf(tmp_path / "huge.pdf", 14_400, 14_400)
    t0 = time.monotonic()
    view = render_page(tmp_path / "huge.pdf", 1, PASSAGE)
    seconds = time.monotonic() - t0
    width, height = png_size(view.png)
    assert max(width, height) <= MAX_SIDE_PX and width * height <= MAX_PIXELS
    assert width * height > MAX_PIXELS * 0.9  # lowered to fit, not further
    assert view.highlighted == [PASSAGE]
    assert seconds < 1.5, seconds


@pytest.mark.parametrize("size", [(14_400, 100), (100, 14_400), (3_000, 3_000)])
def test_odd_shapes_fit_each_side_and_the_total(tmp_path, size):
    make_pdf(tmp_path / "odd.pdf", *size)
    width, height = png_size(render_page(tmp_path / "odd.pdf", 1).png)
    assert max(width, height) <= MAX_SIDE_PX and width * height <= MAX_PIXELS
    assert width / height == pytest.approx(size[0] / size[1], rel=0.05)


def test_an_ordinary_page_keeps_its_zoom(tmp_path):
    make_pdf(tmp_path / "letter.pdf", 612, 792)
    assert png_size(render_page(tmp_path / "letter.pdf", 1).png) == (918, 1188)
    assert fit_zoom(pymupdf.Rect(0, 0, 612, 792), 1.5) == 1.5
    assert fit_zoom(pymupdf.Rect(0, 0, 10, 10), 1.5) == 1.5  # never raised


def test_a_page_out_of_range_is_404(tmp_path):
    make_pdf(tmp_path / "one.pdf", 612, 792)
    with pytest.raises(PageError) as caught:
        render_page(tmp_path / "one.pdf", 2)
    assert caught.value.status == 404

"""Pictures: the occupancy calculator's three graphs and the roofline exported as PNG/SVG for matmul_tiled on
g80 and h100, the self-contained HTML report of ``analyze`` (structure), and that report rendered in a real
headless browser (Debian's chromium) with its screenshot inspected.

Set ``PERFMODEL_TEST_ARTIFACTS=DIR`` to keep the files the tests write (else they go to pytest's tmp folder).
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

DEVICES = ["g80", "h100"]
WIDTH = 128


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    keep = os.environ.get("PERFMODEL_TEST_ARTIFACTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        return Path(keep)
    return tmp_path_factory.mktemp("plots")


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    width, height = struct.unpack(">II", data[16:24])   # the IHDR chunk
    return width, height


def _pixels(path: Path) -> np.ndarray:
    from matplotlib.image import imread

    image = imread(str(path))
    return (image[..., :3] * 255).round().astype(int)


def _has_colour(pixels: np.ndarray, hex_colour: str, tolerance: int = 12, at_least: int = 30) -> bool:
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(pixels - rgb).max(axis=-1) <= tolerance).sum()) >= at_least


@pytest.fixture(scope="module")
def analyses(cli_module) -> dict:
    docs = {}
    for device in DEVICES:
        code, out, err = cli_module("analyze", "matmul_tiled", "--device", device, "-D", f"Width={WIDTH}", "--json")
        assert code == 0, err
        docs[device] = json.loads(out)
    return docs


@pytest.fixture(scope="module")
def cli_module():
    import sys
    from io import StringIO

    from perfmodel.cli.main import main

    def run(*args):
        old_argv, old_out, old_err = sys.argv, sys.stdout, sys.stderr
        sys.argv = ["perfmodel", *map(str, args)]
        sys.stdout, sys.stderr = StringIO(), StringIO()
        try:
            main()
            code = 0
        except SystemExit as exit_:
            code = 0 if exit_.code is None else int(exit_.code)
        finally:
            out, err = sys.stdout.getvalue(), sys.stderr.getvalue()
            sys.argv, sys.stdout, sys.stderr = old_argv, old_out, old_err
        return code, out, err

    return run


@pytest.mark.parametrize("device", DEVICES)
def test_occupancy_graphs_png_and_svg(device, analyses, cli_module, artifacts):
    doc = analyses[device]
    occ = doc["occupancy"]
    png = artifacts / f"occupancy_matmul_tiled_{device}.png"
    svg = artifacts / f"occupancy_matmul_tiled_{device}.svg"
    for path in (png, svg):
        code, out, err = cli_module("occupancy", "--device", device, "--threads", occ["threads_per_block"], "--regs",
                                    occ["registers_per_thread"], "--smem", occ["shared_memory_per_block"],
                                    "--plot", path)
        assert code == 0, err
    assert _png_size(png.read_bytes()) == (1500, 420)   # figsize 15 x 4.2 inches at 100 dpi
    pixels = _pixels(png)
    assert _has_colour(pixels, "#1f77b4") and _has_colour(pixels, "#2ca02c")   # blocks/SM and occupancy lines
    assert _has_colour(pixels, "#d62728")                                       # this kernel's point
    root = ET.fromstring(svg.read_bytes())
    texts = " ".join("".join(t.itertext()) for t in root.iter() if t.tag.endswith("text"))
    for title in ("Impact of varying threads per block", "Impact of varying registers per thread",
                  "Impact of varying shared memory per block"):
        assert title in texts
    # the figure title states what the calculator says for this launch (checked against the oracle elsewhere)
    assert f"-> {occ['blocks_per_sm']} blocks/SM" in texts


@pytest.mark.parametrize("device", DEVICES)
def test_roofline_png(device, analyses, cli_module, artifacts):
    path = artifacts / f"roofline_matmul_tiled_{device}.png"
    code, out, err = cli_module("analyze", "matmul_tiled", "--device", device, "-D", f"Width={WIDTH}", "--plot", path)
    assert code == 0, err
    assert _png_size(path.read_bytes()) == (750, 500)
    pixels = _pixels(path)
    assert _has_colour(pixels, "#d62728") and _has_colour(pixels, "#1f77b4")   # the kernel and seed points


def test_roofline_numbers_follow_the_slides():
    """The seed point on G80: CGMA 16 flops per 4-byte load = 4 flop/B, on the 86.4 GB/s roof: 345.6 GFLOPS (the
    slides' figures); the roof's ridge at 346.5 / 86.4 flop/B."""
    from perfmodel.analysis import analyze
    from perfmodel.report.plots import roofline_numbers

    numbers = roofline_numbers(analyze("matmul_tiled", "g80", {"Width": 64}).to_json())
    assert numbers["seed_intensity"] == pytest.approx(4.0)
    assert numbers["seed_gflops"] == pytest.approx(345.6)
    assert numbers["peak_gflops"] == pytest.approx(346.5) and numbers["dram_gb_per_s"] == pytest.approx(86.4)
    assert numbers["ridge"] == pytest.approx(346.5 / 86.4)


class _Structure(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.tags, self.external, self.text = set(), [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for key in ("src", "href"):
            if attrs.get(key):
                self.external.append((tag, attrs[key]))

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def html_report(cli_module, artifacts) -> Path:
    path = artifacts / "analyze_matmul_tiled_h100.html"
    code, out, err = cli_module("analyze", "matmul_tiled", "--device", "h100", "-D", f"Width={WIDTH}", "--plot", path)
    assert code == 0, err
    return path


def test_html_report_structure(html_report, analyses):
    text = html_report.read_text(encoding="utf-8")
    parser = _Structure()
    parser.feed(text)
    assert text.startswith("<!DOCTYPE html>")
    assert {"title", "headline", "roofline", "launch", "cgma", "resources", "hot-lines", "advice"} <= parser.ids
    assert "svg" in parser.tags and "script" not in parser.tags and "link" not in parser.tags
    # one self-contained file: nothing loaded from elsewhere (the SVG's own xmlns/xlink names are not loads)
    assert [e for e in parser.external if not e[1].startswith("#")] == []
    doc = analyses["h100"]
    body = " ".join(parser.text)
    assert f"{doc['predicted_gflops']:,.1f} GFLOPS" in body
    assert f"{doc['occupancy']['blocks_per_sm']} blocks/SM" in body
    assert doc["hot_lines"][0]["source"] in body


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_html_report_renders_in_headless_chromium(html_report, artifacts, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no headless browser: install Debian's chromium (apt-get install chromium); .ci/run does "
                    "where apt is available")
    shot = artifacts / "analyze_matmul_tiled_h100_chromium.png"
    shot.unlink(missing_ok=True)
    done = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1200,1800", f"--user-data-dir={tmp_path / 'profile'}",
                           f"--screenshot={shot}", html_report.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert shot.is_file(), f"chromium wrote no screenshot: {done.stderr[-2000:]}"
    assert _png_size(shot.read_bytes()) == (1200, 1800)
    pixels = _pixels(shot)
    white = (pixels >= 250).all(axis=-1).mean()
    assert 0.4 < white < 0.99, f"{white:.1%} of the page is white: blank or unstyled"
    # the rendered page shows the headline's green rule, the bound resource's highlighted row, the resource bars
    # and the roofline's kernel point: CSS and the inline SVG were both rendered
    assert _has_colour(pixels, "#2ca02c", at_least=200)
    assert _has_colour(pixels, "#fde0dc", tolerance=4, at_least=2000)
    assert _has_colour(pixels, "#1f77b4", at_least=500)
    assert _has_colour(pixels, "#d62728", at_least=100)

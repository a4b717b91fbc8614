"""The RAG page in headless Chromium: upload the synthetic demo file through the page's
uploader, see the tables with the numbers metrics_core computes, take a screenshot
(``tests/artifacts/rag_page_upload.png``), show another page and come back: the file is still
evaluated (``tests/artifacts/rag_page_after_another_page.png``)."""

from __future__ import annotations

import re

import pytest

from metrics_core.rag import loader, suite
from metrics_core.rag.demo import demo_rag_path
from tests.test_browser import (  # noqa: F401 (pytest fixtures)
    CHROMIUM,
    app_url,
    assert_no_failure,
    browser,
    expect,
    nav_link,
    new_page,
    screenshot,
    wait_idle,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium"),
]


def test_rag_page_on_an_uploaded_file(new_page, app_url):  # noqa: F811
    data = loader.load_rag(demo_rag_path())
    results = {r.name: r for r in suite.evaluate(data.samples, data.outputs,
                                                 suite.default_metrics(semantic=False))}
    page = new_page(f"{app_url}/rag")
    expect(page.locator("h1").filter(has_text=re.compile("^RAG evaluation$"))).to_be_visible()
    wait_idle(page)
    page.locator(".st-key-rag_file input[type=file]").set_input_files(demo_rag_path())
    expect(page.locator(f'.st-key-rag_file [aria-label="Remove {demo_rag_path().name}"]')
           ).to_be_visible()
    relevance = page.locator(".st-key-rag_table_retrieval_relevance")
    expect(relevance).to_be_visible()
    wait_idle(page)
    assert_no_failure(page)
    for key in ("rag_table_retrieval_accuracy", "rag_table_generation_correctness",
                "rag_table_noise_robustness", "rag_scenarios", "rag_pairs", "rag_worst"):
        expect(page.locator(f".st-key-{key}")).to_be_visible()
    expect(page.get_by_text(f"{len(data)} samples; intervals")).to_be_visible()
    assert nav_link(page, "RAG").count() == 1
    # The grid draws on a canvas; read its cells through the download-free accessible copy:
    # Streamlit mirrors the visible cells in an ARIA table.
    grid = page.locator(".st-key-rag_table_generation_correctness [role=gridcell]")
    expect(grid.first).to_be_attached()
    cells = grid.all_inner_texts()
    assert f"{results['token_f1'].value:.4f}" in cells
    cells = page.locator(".st-key-rag_table_generation_faithfulness [role=gridcell]"
                         ).all_inner_texts()
    assert "—" in cells  # llm_faithfulness without a critic: undefined, not 0
    path = screenshot(page, "rag_page_upload")
    assert path.stat().st_size > 10_000

    # another page, then the RAG page again by its link: the file is still evaluated
    nav_link(page, "Overview").click()
    expect(page.locator("h1").filter(has_text=re.compile("^RAG evaluation$"))).to_have_count(0)
    wait_idle(page)
    nav_link(page, "RAG").click()
    expect(page.get_by_text("Showing the file uploaded earlier in this session: "
                            f"{demo_rag_path().name}.")).to_be_visible()
    expect(page.locator(".st-key-rag_table_generation_correctness")).to_be_visible()
    wait_idle(page)
    assert_no_failure(page)
    grid = page.locator(".st-key-rag_table_generation_correctness [role=gridcell]")
    expect(grid.filter(has_text=f"{results['token_f1'].value:.4f}")).to_have_count(1)
    screenshot(page, "rag_page_after_another_page")

"""Documents others wrote as HTML, printed by Chromium, with their truth from their own HTML: a probe of
documents nobody here made (issue 30, round 27), not a tuning set.

Usage (from the repository root; needs Playwright and Debian's Chromium, as the browser tests do, and a
Rust toolchain's documentation, which rustup installs with the toolchain):

    python -m bench.accuracy.html_docs --out DIR [--root HTML_DIR] [--tools auto] [--only NAME,...]

The pages are Rust's books as mdBook writes them (the Book, the Reference, Cargo's and rustc's books, the
Nomicon, the Edition Guide, the Embedded Book, the Unstable Book): prose, code listings, tables,
admonitions ("Note", "Example"), three heading levels. Each page is opened from its file and printed as a
reader's browser prints it ("Save as PDF": print styles, A4, backgrounds on), and its truth is the page's
``<main>`` element as Markdown (``markdownify``): headings, paragraphs, lists, tables as pipe tables,
code as fenced blocks. Left out of the truth: what the print does not show (the hidden lines of a
listing, ``.boring``) and the Reference's rule links (``.rule``: "[*]" in the margin, an anchor for
each paragraph, no content). Links keep their text, pictures are dropped.

Scored with the public sets' measures (``public.markdown_set``). The truth is the authors' markup, so
a heading is what they tagged ``<h1>``-``<h6>``: an admonition's label is not one, a table's caption
set as a bold paragraph is text.
"""

from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

from bench.accuracy.printed import CHROMIUM

ROOT_GLOB = "~/.rustup/toolchains/*/share/doc/rust/html"
# Pages with tables (every table-bearing page of the books but the Reference's test summary and the
# platform pages, three of those), and a few with headings, lists and code only.
PAGES = (
    "book/appendix-02-operators",
    "book/ch00-00-introduction",
    "book/ch03-02-data-types",
    "book/ch04-01-what-is-ownership",
    "book/ch08-02-strings",
    "cargo/commands/cargo-pkgid",
    "cargo/commands/cargo-yank",
    "cargo/reference/build-cache",
    "cargo/reference/cargo-targets",
    "cargo/reference/lints",
    "cargo/reference/pkgid-spec",
    "cargo/reference/profiles",
    "cargo/reference/semver",
    "cargo/reference/workspaces",
    "edition-guide/rust-2018/index",
    "edition-guide/rust-2018/path-changes",
    "edition-guide/rust-2021/index",
    "edition-guide/rust-2024/index",
    "embedded-book/index",
    "embedded-book/interoperability/index",
    "embedded-book/intro/index",
    "embedded-book/intro/no-std",
    "embedded-book/peripherals/a-first-attempt",
    "embedded-book/static-guarantees/design-contracts",
    "embedded-book/static-guarantees/state-machines",
    "nomicon/phantom-data",
    "nomicon/races",
    "nomicon/subtyping",
    "reference/attributes",
    "reference/attributes/codegen",
    "reference/expressions",
    "reference/expressions/literal-expr",
    "reference/expressions/operator-expr",
    "reference/expressions/range-expr",
    "reference/expressions/tuple-expr",
    "reference/inline-assembly",
    "reference/introduction",
    "reference/items/associated-items",
    "reference/items/functions",
    "reference/items/modules",
    "reference/names/preludes",
    "reference/notation",
    "reference/subtyping",
    "reference/syntax-index",
    "reference/tokens",
    "reference/type-layout",
    "reference/types/boolean",
    "reference/types/numeric",
    "rustc/check-cfg",
    "rustc/exploit-mitigations",
    "rustc/linker-plugin-lto",
    "rustc/lints/groups",
    "rustc/platform-support",
    "rustc/platform-support/hexagon-unknown-none-elf",
    "rustc/platform-support/nto-qnx",
    "rustc/platform-support/thumbv8m.main-none-eabi",
    "rustc/symbol-mangling/v0",
    "rustc/targets/known-issues",
    "style-guide/index",
    "unstable-book/compiler-flags/on-broken-pipe",
    "unstable-book/compiler-flags/print-check-cfg",
    "unstable-book/language-features/asm-experimental-arch",
    "unstable-book/language-features/asm-experimental-reg",
)
# Not in print, or no content: a listing's hidden lines, the Reference's rule anchors, navigation.
UNSEEN = ".boring, .rule, nav, script, style"


def truth_markdown(page_html: str) -> str:
    """The page's ``<main>`` (or ``<body>``) as Markdown: ATX headings, pipe tables, fenced code; links
    as their text, pictures and what print does not show (``UNSEEN``) left out."""
    from bs4 import BeautifulSoup
    from markdownify import markdownify

    soup = BeautifulSoup(page_html, "html.parser")
    main = soup.find("main") or soup.body or soup
    for hidden in main.select(UNSEEN):
        hidden.decompose()
    return markdownify(str(main), heading_style="ATX", strip=["a", "img"]).strip() + "\n"


def find_root() -> Path | None:
    """The documentation folder of an installed Rust toolchain (the newest name first), if any."""
    found = sorted(glob.glob(str(Path(ROOT_GLOB).expanduser())), reverse=True)
    return Path(found[0]) if found else None


def document_name(page: str) -> str:
    return page.replace("/", "_")


def build(out: Path, root: Path, only: tuple[str, ...] = ()) -> list[str]:
    """Print every page of ``PAGES`` found under ``root`` (or ``only`` these names) into ``out/pdf`` with
    its truth in ``out/gt``; the names written."""
    from playwright.sync_api import sync_playwright

    (out / "pdf").mkdir(parents=True, exist_ok=True)
    (out / "gt").mkdir(parents=True, exist_ok=True)
    names = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            for page_path in PAGES:
                name, source = document_name(page_path), root / f"{page_path}.html"
                if (only and name not in only) or not source.exists():
                    continue
                page = browser.new_page()
                try:
                    page.goto(source.as_uri())
                    page.emulate_media(media="print")
                    margin = {side: "15mm" for side in ("top", "bottom", "left", "right")}
                    page.pdf(
                        path=str(out / "pdf" / f"{name}.pdf"),
                        format="A4",
                        print_background=True,
                        margin=margin,
                    )
                finally:
                    page.close()
                truth = truth_markdown(source.read_text(encoding="utf-8"))
                (out / "gt" / f"{name}.md").write_text(truth, encoding="utf-8")
                names.append(name)
        finally:
            browser.close()
    return names


def main(argv: list[str] | None = None) -> int:
    from bench.accuracy.public import markdown_set, markdown_table

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for the printed PDFs and their truth")
    ap.add_argument("--root", type=Path, default=None, help=f"the books' HTML [{ROOT_GLOB}]")
    ap.add_argument("--tools", default="auto")
    ap.add_argument("--only", default="", help="comma-separated document names (book_ch03-02-data-types)")
    args = ap.parse_args(argv)
    root = args.root or find_root()
    if root is None or not root.is_dir():
        print(
            f"no Rust documentation at {args.root or ROOT_GLOB}: install a toolchain with rustup",
            file=sys.stderr,
        )
        return 2
    names = build(args.out, root, tuple(n for n in args.only.split(",") if n))
    rows = {
        f"Rust's books, {tool}": markdown_set(args.out, tool, tuple(names)) for tool in args.tools.split(",")
    }
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

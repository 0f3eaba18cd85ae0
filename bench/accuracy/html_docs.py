"""Documents others wrote as HTML, printed by Chromium, with their truth from their own HTML: probes of
documents nobody here made (issue 30, rounds 27-33), not tuning sets.

Usage (from the repository root; needs Playwright and Debian's Chromium, as the browser tests do, and the
documentation the collections name, where it is installed):

    python -m bench.accuracy.html_docs --out DIR [--tools auto] [--only NAME,...]
        [--sets rust,node,valgrind,texinfo,npm,libxslt,gtkdoc,rustdoc,sphinx,expat,ninja]
    python -m bench.accuracy.html_docs --out DIR --sets rust,node,npm --rest 24   # pages no list names

Eleven collections, each as its project's tool (or its author's hand) writes it:
- ``rust``: Rust's books as mdBook writes them (the Book, the Reference, Cargo's and rustc's books, ...),
  from a rustup toolchain: prose, code listings, tables, admonitions, three heading levels.
- ``node``: Node.js's API reference as its own generator writes it (Debian's ``nodejs-doc``): headings
  that are call signatures, parameter lists, tables, paired code examples, stability bars.
- ``valgrind``: Valgrind's user manual as DocBook's XSL writes it (``valgrind`` ships it): numbered
  sections, long option lists (definition lists), program listings.
- ``texinfo``: libffi's manual as GNU Texinfo's ``makeinfo`` writes HTML (``libffi-dev`` ships it):
  numbered sections, function definitions (a signature over its indented description), examples.
- ``npm``: npm's CLI documentation as npm's own generator writes it from Markdown (Node.js ships it):
  GitHub-styled pages, a table of contents on each, flag tables, option headings over bullet lists.
- ``libxslt``: libxslt's and libexslt's API reference as libxml2's devhelp stylesheet writes it
  (``libxslt1-dev`` ships it): a module's name as its title in lower case, synopses set in columns in
  shaded boxes, each function an entry (title, listing, sentence, parameter list), rules between.
- ``gtkdoc``: libtasn1's API reference as gtk-doc writes it (``libtasn1-6-dev`` ships it): summary tables
  of return types set flush right beside names, parameter tables with names flush right (round 32).
- ``rustdoc``: the Rust standard library's API as rustdoc writes it (the toolchain's ``rust-docs``): item
  signatures as headings set in code, tables of items (name, summary), collapsible sections (round 33).
- ``sphinx``: Debian's Python Policy as Sphinx writes one page of HTML (``python3`` ships it): numbered
  sections, definition lists, literal blocks (round 33).
- ``expat``: Expat's reference, written by hand as XHTML (``libexpat1-dev`` ships it): function entries
  in boxes, handler typedefs, notes (round 35).
- ``ninja``: Ninja's manual, AsciiDoc through DocBook's XSL (``ninja-build`` ships it): chapters, variable
  lists, listings, a contents list (round 35).

Each page is opened from its file and printed as a reader's browser prints it ("Save as PDF": print
styles, A4, backgrounds on). Its truth is what that print shows, in the authors' markup: the page after
its print styles, with every element the print does not show taken out (a closed ``<details>`` keeps
only its summary), its content element as Markdown
(``markdownify``): headings, paragraphs, lists, tables as pipe tables, code as fenced blocks. Links keep
their text, pictures are dropped. Per collection, left out of both: navigation the print would repeat on
every chapter (Valgrind's "Prev / Up / Next" bars, Texinfo's "Next: / Up:" lines, npm's banner and
"Edit this page" link, hidden in print here too); left out of the truth only: marks with no content (the
Reference's "[*]" rule anchors).

``--rest N`` prints, instead of a collection's listed pages, N pages it does not list, spread evenly over
the sorted rest (``rest_pages``: redirect stubs, indexes and whole-book pages left out): pages nobody
read while writing the rules, to check that what was fitted to the listed pages holds on the others
(round 31).

Scored with the public sets' measures (``public.markdown_set``). The truth is the authors' markup, so
a heading is what they tagged ``<h1>``-``<h6>``: an admonition's label is not one, a table's caption
set as a bold paragraph is text.
"""

from __future__ import annotations

import argparse
import glob
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.accuracy.printed import CHROMIUM

# Pages with tables (every table-bearing page of the books but the Reference's test summary and the
# platform pages, three of those), and a few with headings, lists and code only.
RUST_PAGES = (
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
# Every module page whose print holds a table (the history tables under "History" are hidden in print).
NODE_PAGES = (
    "corepack",
    "crypto",
    "dns",
    "documentation",
    "esm",
    "fs",
    "http2",
    "intl",
    "module",
    "n-api",
    "os",
    "readline",
    "stream",
    "url",
    "util",
    "webcrypto",
)
# The user manual's chapters and the quick start. Not the release notes and licences (plain text in
# <pre>), nor the FAQ: DocBook lays its questions and answers out in an HTML table, which the truth
# would score as a table and no reader of the print sees as one.
VALGRIND_PAGES = (
    "quick-start",
    "manual-intro",
    "manual-core",
    "manual-core-adv",
    "manual-writing-tools",
    "mc-manual",
    "cg-manual",
    "cl-manual",
    "cl-format",
    "hg-manual",
    "drd-manual",
    "ms-manual",
    "dh-manual",
    "lk-manual",
    "nl-manual",
    "bbv-manual",
)

# Every node of the manual but the Top node (a menu) and the index (a two-column table of links).
TEXINFO_PAGES = (
    "Introduction",
    "Using-libffi",
    "The-Basics",
    "Simple-Example",
    "Types",
    "Primitive-Types",
    "Structures",
    "Size-and-Alignment",
    "Arrays-Unions-Enums",
    "Type-Example",
    "Complex",
    "Complex-Type-Example",
    "Multiple-ABIs",
    "The-Closure-API",
    "Closure-Example",
    "Thread-Safety",
    "Memory-Usage",
    "Missing-Features",
)
# npm's command, usage and configuration pages: every page with a table (two command pages' flag tables)
# and a spread of the rest (option lists as headings over bullets, selectors, scripts, folders).
NPM_PAGES = (
    "commands/npm-audit",
    "commands/npm-ci",
    "commands/npm-exec",
    "commands/npm-init",
    "commands/npm-ls",
    "commands/npm-outdated",
    "commands/npm-publish",
    "commands/npm-query",
    "commands/npm-stage",
    "commands/npm-token",
    "commands/npm-trust",
    "commands/npm-update",
    "commands/npm-version",
    "commands/npm-view",
    "configuring-npm/folders",
    "configuring-npm/npmrc",
    "configuring-npm/package-lock-json",
    "using-npm/dependency-selectors",
    "using-npm/logging",
    "using-npm/package-spec",
    "using-npm/registry",
    "using-npm/scope",
    "using-npm/scripts",
    "using-npm/workspaces",
)


# libxslt's and libexslt's API reference as libxml2's devhelp stylesheet writes it: every module page.
LIBXSLT_PAGES = (
    "libxslt/libxslt-attributes",
    "libxslt/libxslt-documents",
    "libxslt/libxslt-extensions",
    "libxslt/libxslt-extra",
    "libxslt/libxslt-functions",
    "libxslt/libxslt-imports",
    "libxslt/libxslt-keys",
    "libxslt/libxslt-namespaces",
    "libxslt/libxslt-numbersInternals",
    "libxslt/libxslt-pattern",
    "libxslt/libxslt-preproc",
    "libxslt/libxslt-security",
    "libxslt/libxslt-templates",
    "libxslt/libxslt-transform",
    "libxslt/libxslt-variables",
    "libxslt/libxslt-xslt",
    "libxslt/libxslt-xsltInternals",
    "libxslt/libxslt-xsltexports",
    "libxslt/libxslt-xsltlocale",
    "libxslt/libxslt-xsltutils",
    "libexslt/libexslt-exslt",
)
# libtasn1's API reference as gtk-doc writes it: one long page of functions, parameter and return tables.
GTKDOC_PAGES = ("libtasn1-libtasn1",)
# The Rust standard library's API as rustdoc writes it: every page of ``std`` under 120 KB whose print
# holds a table, and module pages of prose, lists and item tables (round 33).
RUSTDOC_PAGES = (
    "std/collections/index",
    "std/fmt/index",
    "std/index",
    "std/keyword.match",
    "std/macro.println",
    "std/mem/fn.size_of",
    "std/net/fn.hostname",
    "std/option/index",
    "std/os/unix/io/index",
    "std/random/struct.DefaultRandomSource",
    "std/result/index",
    "std/str/pattern/trait.Pattern",
    "std/sync/atomic/index",
    "std/thread/fn.sleep_until",
    "std/time/struct.Instant",
)
# Debian's Python Policy as Sphinx writes one page of HTML (Docutils' writer, the "nature" theme): numbered
# sections, definition lists, literal blocks (round 33).
SPHINX_PAGES = ("python-policy",)
# Expat's reference, written by hand as XHTML with its own style sheet (``libexpat1-dev`` ships it): a
# long page of function entries (a signature in a box over its description), handler typedefs, notes in
# shaded boxes (round 35).
EXPAT_PAGES = ("reference",)
# Ninja's manual, written in AsciiDoc and turned into HTML through DocBook's XSL (``ninja-build`` ships
# it): chapters of prose, variable lists, code listings, a table of contents (round 35).
NINJA_PAGES = ("manual",)


@dataclass(frozen=True)
class Collection:
    """One producer's documentation: where it is installed, which pages, what holds the content."""

    key: str
    title: str
    root_glob: str
    pages: tuple[str, ...]
    content: str = "main"  # CSS selector of the element whose Markdown is the truth
    unseen: str = ""  # printed, but no content: left out of the truth
    hidden: str = ""  # navigation repeated on every chapter: hidden in print and left out of the truth
    hint: str = ""  # how to install it
    rest: tuple[str, ...] = ()  # globs under the root of the pages ``--rest`` draws from


COLLECTIONS = {
    c.key: c
    for c in (
        Collection(
            "rust",
            "Rust's books",
            "~/.rustup/toolchains/*/share/doc/rust/html",
            RUST_PAGES,
            unseen=".rule",
            hint="install a toolchain with rustup",
            rest=(
                "book/ch*.html",
                "reference/*.html",
                "cargo/reference/*.html",
                "nomicon/*.html",
                "rustc/*.html",
            ),
        ),
        Collection(
            "node",
            "Node.js API",
            "/usr/share/doc/nodejs/api",
            NODE_PAGES,
            content="#column1",
            hint="Debian: apt install nodejs-doc",
            rest=("[a-z]*.html",),
        ),
        Collection(
            "valgrind",
            "Valgrind manual",
            "/usr/share/doc/valgrind/html",
            VALGRIND_PAGES,
            content="body",
            hidden="table.nav",
            hint="Debian: apt install valgrind",
        ),
        Collection(
            "texinfo",
            "libffi manual",
            "/usr/share/doc/libffi*/html",
            TEXINFO_PAGES,
            content="body",
            hidden="div.header, div.nav-panel, hr",
            hint="Debian: apt install libffi-dev",
        ),
        Collection(
            "npm",
            "npm CLI docs",
            "/usr/lib/node_modules/npm/docs/output",
            NPM_PAGES,
            content="section#content",
            hidden="#banner, footer#edit",
            hint="install Node.js with its npm (Debian: apt install npm)",
            rest=("commands/*.html", "configuring-npm/*.html", "using-npm/*.html"),
        ),
        Collection(
            "libxslt",
            "libxslt API reference",
            "/usr/share/doc/libxslt1-dev/gtk-doc/html",
            LIBXSLT_PAGES,
            content="body",
            hidden="table.navigation",
            hint="Debian: apt install libxslt1-dev",
        ),
        Collection(
            "gtkdoc",
            "libtasn1 API reference (gtk-doc)",
            "/usr/share/gtk-doc/html/libtasn1",
            GTKDOC_PAGES,
            content="div.refentry",
            hidden="table.navigation",
            hint="Debian: apt install libtasn1-6-dev",
        ),
        Collection(
            "rustdoc",
            "Rust standard library API (rustdoc)",
            "~/.rustup/toolchains/*/share/doc/rust/html",
            RUSTDOC_PAGES,
            content="#main-content",
            hidden="rustdoc-topbar, rustdoc-toolbar",
            hint="install a toolchain with rustup (the rust-docs component)",
            rest=("std/*/index.html", "std/*/struct.*.html", "std/*/fn.*.html"),
        ),
        Collection(
            "sphinx",
            "Debian Python Policy (Sphinx)",
            "/usr/share/doc/python3",
            SPHINX_PAGES,
            content="div.body",
            hint="Debian: apt install python3 (its python-policy.html)",
        ),
        Collection(
            "expat",
            "Expat reference (hand-written XHTML)",
            "/usr/share/doc/libexpat1-dev/expat.html",
            EXPAT_PAGES,
            content="body",
            hint="Debian: apt install libexpat1-dev",
        ),
        Collection(
            "ninja",
            "Ninja manual (AsciiDoc through DocBook XSL)",
            "/usr/share/doc/ninja-build",
            NINJA_PAGES,
            content="body",
            hint="Debian: apt install ninja-build",
        ),
    )
}
# Always out of the truth: what never prints.
NEVER = "script, style, noscript, template"
# In the page, after its print styles: every element the print does not show is taken out, so the truth
# is what a reader sees on paper (a listing's hidden lines, a sidebar, a "History" table).
DROP_UNPRINTED = """() => {
  for (const el of Array.from(document.querySelectorAll('body *'))) {
    if (!el.isConnected) continue;
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden') el.remove();
  }
  for (const el of Array.from(document.querySelectorAll('details:not([open]) > :not(summary)'))) el.remove();
  return document.documentElement.outerHTML;
}"""


def truth_markdown(page_html: str, content: str = "main", unseen: str = "") -> str:
    """The ``content`` element of a page (``<main>``, else ``<body>``) as Markdown: ATX headings, pipe
    tables, fenced code; links as their text, pictures and ``unseen`` marks left out. ``page_html`` is the
    page as printed (``DROP_UNPRINTED`` has run)."""
    from bs4 import BeautifulSoup
    from markdownify import markdownify

    soup = BeautifulSoup(page_html, "html.parser")
    main = soup.select_one(content) or soup.body or soup
    for gone in main.select(", ".join(s for s in (NEVER, unseen) if s)):
        gone.decompose()
    return markdownify(str(main), heading_style="ATX", strip=["a", "img"]).strip() + "\n"


def find_root(collection: Collection) -> Path | None:
    """Where the collection is installed (the newest name first, for a glob), if anywhere."""
    found = sorted(glob.glob(str(Path(collection.root_glob).expanduser())), reverse=True)
    return Path(found[0]) if found and Path(found[0]).is_dir() else None


# Never drawn by ``--rest``: a whole book or API on one page (mdBook's "print" asks the browser to print
# as it loads), and pages of links.
NOT_REST = ("all", "print", "index", "toc", "404")


def rest_pages(collection: Collection, root: Path, count: int) -> tuple[str, ...]:
    """``count`` pages of the collection that its fixed list does not name, spread evenly over the
    sorted rest (the same pages on every run and every machine with the same documentation).

    Why: a rule written while reading the listed pages is checked on pages nobody read for it; the
    listed pages are tuned on, these are only measured until someone reads them."""
    listed = set(collection.pages)
    rest = sorted(
        {
            str(path.relative_to(root).with_suffix(""))
            for pattern in collection.rest
            for path in root.glob(pattern)
            if path.is_file() and not _redirect(path)
        }
        - listed
    )
    rest = [page for page in rest if Path(page).name not in NOT_REST]
    if count >= len(rest):
        return tuple(rest)
    return tuple(rest[(k * len(rest)) // count] for k in range(count))


def _redirect(path: Path) -> bool:
    """A stub that only sends the reader on (mdBook keeps one for every moved chapter)."""
    head = path.read_text(encoding="utf-8", errors="replace")[:4096].lower()
    return 'http-equiv="refresh"' in head


def document_name(page: str) -> str:
    return page.replace("/", "_")


def build(
    out: Path, collection: Collection, root: Path, only: tuple[str, ...] = (), pages: tuple[str, ...] = ()
) -> list[str]:
    """Print every page of the collection (or ``pages``) found under ``root`` (or ``only`` these names)
    into ``out/pdf`` with its truth in ``out/gt``; the names written."""
    from playwright.sync_api import sync_playwright

    (out / "pdf").mkdir(parents=True, exist_ok=True)
    (out / "gt").mkdir(parents=True, exist_ok=True)
    names = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            for page_path in pages or collection.pages:
                name, source = document_name(page_path), root / f"{page_path}.html"
                if (only and name not in only) or not source.exists():
                    continue
                page = browser.new_page()
                try:
                    page.goto(source.as_uri())
                    page.emulate_media(media="print")
                    if collection.hidden:
                        page.add_style_tag(content=f"{collection.hidden} {{display: none !important}}")
                    margin = {side: "15mm" for side in ("top", "bottom", "left", "right")}
                    page.pdf(
                        path=str(out / "pdf" / f"{name}.pdf"),
                        format="A4",
                        print_background=True,
                        margin=margin,
                    )
                    printed = page.evaluate(DROP_UNPRINTED)
                finally:
                    page.close()
                truth = truth_markdown(printed, collection.content, collection.unseen)
                (out / "gt" / f"{name}.md").write_text(truth, encoding="utf-8")
                names.append(name)
        finally:
            browser.close()
    return names


def main(argv: list[str] | None = None) -> int:
    from bench.accuracy.public import markdown_set, markdown_table

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for each set's printed PDFs and truth")
    ap.add_argument("--sets", default=",".join(COLLECTIONS), help=f"of {', '.join(COLLECTIONS)}")
    ap.add_argument("--root", type=Path, default=None, help="the HTML folder (one set only)")
    ap.add_argument("--tools", default="auto")
    ap.add_argument("--only", default="", help="comma-separated document names (book_ch03-02-data-types)")
    ap.add_argument(
        "--rest",
        type=int,
        default=0,
        help="instead of each set's listed pages, N pages it does not list, spread over the rest",
    )
    args = ap.parse_args(argv)
    keys = [k for k in args.sets.split(",") if k]
    unknown = [k for k in keys if k not in COLLECTIONS]
    if unknown:
        ap.error(f"unknown set {', '.join(unknown)}: --sets takes {', '.join(COLLECTIONS)}")
    if args.root and len(keys) != 1:
        ap.error("--root names one set's folder: give one set in --sets")
    rows, missing = {}, 0
    for key in keys:
        collection = COLLECTIONS[key]
        root = args.root or find_root(collection)
        if root is None or not root.is_dir():
            print(
                f"no {collection.title} at {args.root or collection.root_glob}: {collection.hint}",
                file=sys.stderr,
            )
            missing += 1
            continue
        if args.rest and not collection.rest:
            print(f"{collection.title}: every page is listed already; no rest to draw", file=sys.stderr)
            continue
        pages = rest_pages(collection, root, args.rest) if args.rest else ()
        only = tuple(n for n in args.only.split(",") if n)
        names = build(args.out / key, collection, root, only, pages)
        label = f"{collection.title}{' (rest)' if args.rest else ''}"
        for tool in args.tools.split(","):
            rows[f"{label}, {tool}"] = markdown_set(args.out / key, tool, tuple(names))
    if rows:
        print(markdown_table(rows))
    return 2 if missing == len(keys) else 0


if __name__ == "__main__":
    sys.exit(main())

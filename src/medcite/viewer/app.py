"""The read-only web viewer over a folder of run directories (``medcite view RUNS_DIR``).

Pages (all GET, permalinks are these URLs plus ``#s2`` sentence and ``#pmid-123`` article anchors):
``/`` runs; ``/run/{run}`` topic list; ``/run/{run}/topic/{topic_id}`` one topic;
``/compare?runs=a&runs=b`` run-level table; ``/compare?runs=a&runs=b&topic=X`` one topic side by side.

Everything from run files is rendered through Jinja2 with autoescaping, and every response carries a
Content-Security-Policy allowing only this server's own script and style (no inline script), so a
payload in an abstract or LLM output is shown as text and could not run even if it slipped through.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from urllib.parse import quote, urlencode

import jinja2
from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from .chart import citation_chart
from .compare import compare_runs, compare_topic
from .loader import CACHE, VALIDATION_STATES, Problem, Run, list_run_dirs, resolve_run
from .summary import RunRow, flat_metrics, run_row, topic_rows
from .topic import build_topic

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
MAX_COMPARE = 6
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def run_url(run: str) -> str:
    return f"/run/{quote(run, safe='')}"


def topic_url(run: str, topic_id: str) -> str:
    return f"/run/{quote(run, safe='')}/topic/{quote(topic_id, safe='')}"


def compare_url(runs: Sequence[str], topic: str | None = None) -> str:
    params = [("runs", r) for r in runs] + ([("topic", topic)] if topic is not None else [])
    return "/compare?" + urlencode(params)


def fmt(value: object, digits: int = 1) -> str:
    """Numbers for tables: '' for missing, fixed decimals for floats."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def make_templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every page is HTML: escape everything that comes from run files
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(run_url=run_url, topic_url=topic_url, compare_url=compare_url, version=__version__)
    env.filters["fmt"] = fmt
    for name in env.list_templates(extensions=["html"]):
        env.get_template(name)  # compile now: the first page view should not pay for it
    return Jinja2Templates(env=env)


class HeadAsGet:
    """ASGI middleware: ``HEAD`` is answered as ``GET`` (same status and headers) without the body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return

        async def send_headers_only(message: Message) -> None:
            if message.get("type") == "http.response.body":
                if not message.get("more_body"):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, send_headers_only)


class _Pages:
    """What every page of the viewer shares: the runs folder, the templates, the error page and the guard that
    turns a failure on bad run content into that run's error page."""

    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir
        self.templates = make_templates()

    def page(self, request: Request, name: str, status: int = 200, **context: object) -> HTMLResponse:
        return self.templates.TemplateResponse(request, name, {"runs_dir": self.runs_dir.name, **context},
                                               status_code=status)

    def error(self, request: Request, status: int, title: str, detail: str = "",
              run: Run | None = None) -> HTMLResponse:
        return self.page(request, "error.html", status, title=title, detail=detail, run=run,
                         problems=run.problems if run is not None else [])

    def no_run(self, request: Request, run_name: str) -> HTMLResponse:
        return self.error(request, 404, "No such run", f"There is no run named {run_name!r} in this folder.")

    def open_run(self, name: str) -> Run | None:
        path = resolve_run(self.runs_dir, name)
        return Run(path, CACHE) if path is not None else None

    def others(self, run: Run) -> list[str]:
        """The names of the folder's other runs (the page's compare-with choices)."""
        return [r.name for r in list_run_dirs(self.runs_dir) if r.name != run.name]

    def guarded(self, request: Request, run: Run | None, build: Callable[[], HTMLResponse]) -> HTMLResponse:
        """Render a page; an unexpected failure on bad run content becomes that run's error page."""
        try:
            return build()
        except Exception as exc:  # a malformed run must never take the viewer down
            log.exception("viewer page %s failed", request.url.path)
            where = f" in run {run.name}" if run is not None else ""
            return self.error(request, 500, f"This page could not be shown{where}",
                              f"{type(exc).__name__}: {exc}", run)

    def index(self, request: Request) -> HTMLResponse:
        """The run list: a row per run, and the runs that could not be summarised."""
        rows: list[RunRow] = []
        broken: list[tuple[str, str]] = []
        for path in list_run_dirs(self.runs_dir):
            try:
                rows.append(run_row(Run(path, CACHE)))
            except Exception as exc:  # one malformed run is listed as broken, the others are still shown
                log.exception("run %s could not be summarised", path.name)
                broken.append((path.name, f"{type(exc).__name__}: {exc}"))
        presets = sorted({r.preset for r in rows})
        return self.page(request, "index.html", runs=rows, broken=broken, presets=presets,
                         states=VALIDATION_STATES, runs_path=str(self.runs_dir))

    def run(self, request: Request, run: Run) -> HTMLResponse:
        """One run: its topics, metrics and citation chart."""
        rows = topic_rows(run)
        others = self.others(run)
        chart, chart_problems = citation_chart(run.metrics, run.metrics_source("citations"), run.verification())
        run.report(chart_problems)
        return self.page(request, "run.html", run=run, row=run_row(run), topics=rows,
                         metrics=flat_metrics(run.metrics), chart=chart, states=VALIDATION_STATES, others=others,
                         problems=run.problems)

    def topic(self, request: Request, run: Run, topic_id: str) -> HTMLResponse:
        """One topic of a run."""
        view = build_topic(run, topic_id)
        if view is None:
            return self.error(request, 404, "No such topic", f"Run {run.name} has no topic {topic_id!r}.", run)
        return self.page(request, "topic.html", run=run, t=view, others=self.others(run), problems=run.problems)

    def compare(self, request: Request, names: list[str], loaded: list[Run], topic: str | None) -> HTMLResponse:
        """Runs side by side: their metrics, or one topic's answers (with links to the previous and next)."""
        if topic is None:
            table = compare_runs(loaded)
            return self.page(request, "compare_runs.html", names=names, c=table, problems=self.problems(loaded))
        tc = compare_topic(loaded, topic)
        if tc is None:
            return self.error(request, 404, "No such topic", f"None of these runs has topic {topic!r}.")
        problems = self.problems(loaded)
        ids = list(dict.fromkeys(t for r in loaded for t in r.topic_ids()))
        pos = ids.index(topic) if topic in ids else -1
        return self.page(request, "compare_topic.html", names=names, c=tc, problems=problems,
                         prev_id=ids[pos - 1] if pos > 0 else None,
                         next_id=ids[pos + 1] if 0 <= pos < len(ids) - 1 else None)

    @staticmethod
    def problems(runs: list[Run]) -> list[tuple[str, Problem]]:
        """Each run's problems, with the run's name."""
        return [(r.name, p) for r in runs for p in r.problems]

    def compared_runs(self, request: Request, runs: list[str]) -> list[Run] | HTMLResponse:
        """The runs ``/compare`` names, opened, or the error page that says why they cannot be compared."""
        names = list(dict.fromkeys(runs))
        if len(names) < 2:
            return self.error(request, 400, "Choose at least two runs to compare",
                              "Tick two or more runs on the run list, or open /compare?runs=A&runs=B.")
        if len(names) > MAX_COMPARE:
            return self.error(request, 400, "Too many runs", f"Compare at most {MAX_COMPARE} runs at once.")
        opened = [self.open_run(n) for n in names]
        missing = [n for n, r in zip(names, opened, strict=True) if r is None]
        if missing:
            unknown = ", ".join(repr(m) for m in missing)
            return self.error(request, 404, "No such run", f"Unknown run(s): {unknown}")
        return [r for r in opened if r is not None]


def _add_middleware(app: FastAPI, allowed_hosts: Sequence[str] | None) -> None:
    """HEAD answered as GET, the static files, the Host check and the security headers on every response."""
    app.add_middleware(HeadAsGet)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    if allowed_hosts:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))

    @app.middleware("http")
    async def security_headers(request: Request,
                               call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        for key, value in SECURITY_HEADERS.items():
            response.headers.setdefault(key, value)
        return response


def create_app(runs_dir: Path, *, allowed_hosts: Sequence[str] | None = None) -> FastAPI:
    """The viewer app over ``runs_dir``. ``allowed_hosts`` limits the Host header (DNS rebinding)."""
    pages = _Pages(Path(runs_dir))
    app = FastAPI(title="medcite viewer", docs_url=None, redoc_url=None, openapi_url=None)
    _add_middleware(app, allowed_hosts)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        titles = {404: "Not found", 405: "Method not allowed (the viewer is read-only)"}
        title = titles.get(exc.status_code, "Error")
        response = pages.error(request, exc.status_code, title, str(exc.detail or ""))
        if exc.status_code == 405:
            response.headers["Allow"] = "GET, HEAD"
        return response

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        return pages.index(request)

    @app.get("/run/{run_name}", response_class=HTMLResponse)
    def run_page(request: Request, run_name: str) -> HTMLResponse:
        run = pages.open_run(run_name)
        if run is None:
            return pages.no_run(request, run_name)
        return pages.guarded(request, run, lambda: pages.run(request, run))

    @app.get("/run/{run_name}/topic/{topic_id:path}", response_class=HTMLResponse)
    def topic_page(request: Request, run_name: str, topic_id: str) -> HTMLResponse:
        run = pages.open_run(run_name)
        if run is None:
            return pages.no_run(request, run_name)
        return pages.guarded(request, run, lambda: pages.topic(request, run, topic_id))

    @app.get("/compare", response_class=HTMLResponse)
    def compare(request: Request, runs: list[str] = Query(default=[]),  # noqa: B008 (FastAPI idiom)
                topic: str | None = None) -> HTMLResponse:
        loaded = pages.compared_runs(request, runs)
        if isinstance(loaded, HTMLResponse):
            return loaded
        names = list(dict.fromkeys(runs))
        return pages.guarded(request, None, lambda: pages.compare(request, names, loaded, topic))

    return app

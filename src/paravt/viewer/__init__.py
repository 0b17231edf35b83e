"""``paravt view RUN... -o DIR``: a static site to browse the episodes of eval and training runs.

``runs`` reads run folders into plain episode dicts (a bad line is skipped and reported),
``frames`` writes the thumbnails (from a training dump's stored frames, else decoded from the
video at the recorded times), ``render`` writes the HTML from Jinja2 templates (``templates/``)
with autoescape on: every string from a model, a dataset or a file name is HTML-escaped with its
control characters made visible (``render.shown``), and no such string ever becomes a URL, an
attribute name or script. The pages open from ``file://``.
"""

__all__: list[str] = []  # nothing here is for the other rooms

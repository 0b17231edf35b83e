"""Pictures for people: where an episode looked, on the video's timeline.

``layout`` turns an episode record into plain geometry (pixel boxes at the called times), and
``episode_sheet`` paints that geometry with Pillow. Keeping the two apart lets a test check where
the bars sit without reading pixels. This room sits above ``agent`` (it reads episode records) and
below ``eval`` and ``cli`` (which write sheets).
"""

__all__: list[str] = []  # nothing here is for the other rooms

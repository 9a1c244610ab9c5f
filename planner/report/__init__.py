"""Reports of a plan: the terminal screen, the HTML page, its charts, the files solve --out writes."""

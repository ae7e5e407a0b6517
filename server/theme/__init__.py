"""A campaign's theme at serve time: its templates, assets, and the rendered page's checks."""

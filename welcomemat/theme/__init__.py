"""A campaign's theme folder: loaded, its HTML frame and stylesheets checked."""

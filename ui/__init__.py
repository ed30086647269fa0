"""tidemark's Streamlit UI.

``ui/serve.py`` serves the page script ``ui/app.py`` (``streamlit run ui/serve.py``); each page lives in its own file
under ``ui/views/`` (not ``pages/``: that name would switch on Streamlit's legacy auto-discovered pages). Everything the pages read or write goes through the catalog service layer
(:class:`jobs.catalog.Catalog`) and the pure definition / engine functions; the helper modules
here (``services``, ``auth``, ``defform``, ``preview``, ``charts``, ``fmt``) keep the pages thin
and the logic testable without a browser.
"""

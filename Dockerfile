# seqviz in a container, for any host: Hugging Face Spaces (Docker SDK), Cloud Run, a university server.
#
#   docker build -t seqviz .                     # podman: podman build --format docker -t seqviz .
#   docker run --rm -p 8501:8501 -v seqviz-data:/data seqviz             # http://localhost:8501
#   docker run --rm -p 8080:8080 -e PORT=8080 -e SEQVIZ_BASE_PATH=seqviz seqviz   # http://localhost:8080/seqviz/
#
# The same pins as requirements.txt (the README's install), with torch's CPU wheels (hosting/requirements.txt),
# so the image holds no CUDA. The trained models ship in assets/models/: nothing is downloaded at run time.
# BASE_IMAGE: any Debian-like image with Python 3.11 and pip on PATH; scripts/check-container builds on a stand-in
# made from Debian's archive where no registry is reachable.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PORT=8501 \
    SEQVIZ_BASE_PATH="" \
    SEQVIZ_DATA_DIR=/data

# A non-root user; uid 1000 is what Hugging Face Spaces runs as. /data holds the lab store (the SQLite file of
# what visitors make, unless SEQVIZ_DATABASE_URL names another database): mount a volume there to keep it.
RUN useradd --create-home --uid 1000 seqviz && mkdir -p /data && chown seqviz:seqviz /data

WORKDIR /app
COPY hosting/requirements.txt hosting/requirements.txt
RUN pip install -r hosting/requirements.txt

# The app's files stay owned by root: the app reads them and writes nothing there.
COPY . .
RUN chmod 0755 scripts/serve

USER seqviz
ENV HOME=/home/seqviz
VOLUME /data
EXPOSE 8501

# Streamlit answers "ok" at <base path>/_stcore/health once it serves; python, as the slim image has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; p = os.environ.get('SEQVIZ_BASE_PATH', '').strip('/'); urllib.request.urlopen('http://127.0.0.1:%s/%s_stcore/health' % (os.environ.get('PORT') or '8501', p + '/' if p else ''), timeout=4)"]

# The one start command (PORT, SEQVIZ_BASE_PATH), also run by the tests outside any container.
CMD ["/app/scripts/serve"]

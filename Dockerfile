# One image for every service; docker-compose.yml picks the entry point per service.
# Build stage: better-sqlite3 compiles from source, so it needs python3, make and g++.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Dependencies first, so editing source does not invalidate the npm ci layer.
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

# Runtime stage: the same base (the native module was built against it), without compilers.
# pocketsphinx and its English model serve TRANSCRIBER=pocketsphinx (Debian bookworm packages).
FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg pocketsphinx pocketsphinx-en-us \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    DATA_DIR=/data \
    PORT=8080
WORKDIR /app
# Schemas and other data files are read at run time, so the whole pruned tree is kept.
COPY --from=build --chown=node:node /app /app
# Created here and owned by `node`, so a fresh named volume at /data inherits the ownership.
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080
# Default: all services in one process on the embedded adapters; compose overrides per service.
CMD ["node", "dist/bin/serve.js"]

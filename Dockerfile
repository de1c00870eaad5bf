# syntax=docker/dockerfile:1
# One image for both apps of cluster-sync; the command picks the app:
#   docker build -t cluster-sync:local .
#   docker run --rm cluster-sync:local node dist/apps/worker/src/main.js --help
#   docker run --rm cluster-sync:local node dist/apps/coordinator/src/main.js --help
# docker-compose.yml (profile "deploy") builds it and runs the workers and the coordinator.

# ---- build: every dependency exactly as package-lock.json pins it, then dist/ ----------------
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY apps ./apps
COPY libs ./libs
COPY scripts ./scripts
RUN npm run build

# ---- runtime: production dependencies only, the built dist/, a non-root user ----------------
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
# The image's own unprivileged user (uid 1000); the code stays root-owned and read-only to it.
USER node
EXPOSE 27182
CMD ["node", "dist/apps/worker/src/main.js", "--help"]

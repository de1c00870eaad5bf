/**
 * What a worker and a coordinator share: launch options (flags + YAML, validated once), the
 * JSON logger, the `/api/v1` HTTP stack (controller, body parsing, error envelope) over any
 * `SyncEngine`-shaped backend, and process bootstrap (signals, listening URL).
 */
export * from './config/launch-config.error';
export * from './config/load-service-config';
export * from './config/parse-launch-args';
export * from './config/service-options.dto';
export * from './config/tuning-options.dto';
export * from './config/load-tuning';
export * from './logging/json-logger';
export * from './logging/log-levels';
export * from './logging/log-sinks';
export * from './logging/nest-logger.adapter';
export * from './http/api-envelope';
export * from './http/configure-http-app';
export * from './engine/engine-holder';
export * from './engine/engine-factory';
export * from './engine/engine.tokens';
export * from './sync-api.module';
export * from './bootstrap/read-launch-config';
export * from './bootstrap/shutdown-on-signals';
export * from './bootstrap/listening-url';
export * from './bootstrap/create-service-logger';
export * from './bootstrap/run-service';
export * from './control/redis-connection';
export * from './metrics';
export * from './openapi';
export * from './control/control-clock';
export * from './control/liveness';
export * from './control/command-order';

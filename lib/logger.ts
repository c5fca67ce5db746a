import pino, { type Logger } from 'pino';

/** JSON logs to stdout (one line per event); the level comes from LOG_LEVEL. */
export const createLogger = (level: string, service: string): Logger => pino({ level, base: { service } });

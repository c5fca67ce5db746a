import { InvalidArgumentError } from 'commander';

/** Option parsers: a bad value is commander's usage error (exit 1) naming the option. */
export function positiveInt(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new InvalidArgumentError('must be a whole number of 1 or more');
  return Number(raw);
}

export function oneOf(values: readonly string[]): (raw: string) => string {
  return (raw) => {
    if (!values.includes(raw)) throw new InvalidArgumentError(`must be one of ${values.join(', ')}`);
    return raw;
  };
}

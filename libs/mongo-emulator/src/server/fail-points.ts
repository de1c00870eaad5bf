import type { Document } from 'bson';
import { CommandError } from '../errors';
import { asNumber } from './values';

/**
 * configureFailPoint modes, as mongod parses them:
 * 'alwaysOn' | 'off' | {times: n} | {skip: n} | {activationProbability: p}.
 */
export type FailPointMode =
  | { kind: 'off' }
  | { kind: 'alwaysOn' }
  | { kind: 'times'; remaining: number }
  | { kind: 'skip'; remaining: number }
  | { kind: 'probability'; p: number };

class FailPoint {
  mode: FailPointMode = { kind: 'off' };
  data: Document = {};
  /** How often the fail point fired; configureFailPoint replies with it as `count`. */
  timesEntered = 0;

  /** Consumes one activation when the fail point is active (times/skip counters). */
  fire(): boolean {
    const mode = this.mode;
    switch (mode.kind) {
      case 'off':
        return false;
      case 'alwaysOn':
        break;
      case 'times':
        if (mode.remaining <= 0) return false;
        mode.remaining -= 1;
        if (mode.remaining === 0) this.mode = { kind: 'off' };
        break;
      case 'skip':
        if (mode.remaining > 0) {
          mode.remaining -= 1;
          return false;
        }
        break;
      case 'probability':
        // p = 1 always fires, p = 0 never (Math.random() is in [0, 1)).
        if (Math.random() >= mode.p) return false;
        break;
    }
    this.timesEntered += 1;
    return true;
  }
}

export function parseFailPointMode(value: unknown): FailPointMode {
  if (value === 'alwaysOn') return { kind: 'alwaysOn' };
  if (value === 'off') return { kind: 'off' };
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const doc = value as Document;
    const keys = Object.keys(doc);
    if (keys.length === 1) {
      const n = asNumber(doc[keys[0]]);
      if (keys[0] === 'times' && n !== undefined && Number.isInteger(n) && n >= 0) {
        return n === 0 ? { kind: 'off' } : { kind: 'times', remaining: n };
      }
      if (keys[0] === 'skip' && n !== undefined && Number.isInteger(n) && n >= 0) {
        return { kind: 'skip', remaining: n };
      }
      if (keys[0] === 'activationProbability') {
        // mongod (FailPoint::parseBSON): a number in [0, 1]; each evaluation activates with
        // that probability, independently (an int32 threshold against a uniform draw).
        if (n === undefined) {
          throw new CommandError(
            'BadValue',
            "the 'activationProbability' option to 'mode' must be a double between 0 and 1",
          );
        }
        if (!(n >= 0 && n <= 1)) {
          throw new CommandError('BadValue', 'activationProbability must be between 0.0 and 1.0');
        }
        return { kind: 'probability', p: n };
      }
    }
  }
  throw new CommandError(
    'BadValue',
    "'mode' must be one of 'off', 'alwaysOn', {times: <positive int>}, {skip: <positive int>} or {activationProbability: <0..1>}",
  );
}

/**
 * Named fail points (mongod's FailPointRegistry). Any name can be configured; the wire
 * server evaluates `failCommand`, other modules may evaluate their own names.
 */
export class FailPointRegistry {
  private readonly points = new Map<string, FailPoint>();

  /** Sets mode and data; returns how many times the fail point had fired before. */
  configure(name: string, mode: FailPointMode, data: Document = {}): number {
    let point = this.points.get(name);
    if (!point) {
      point = new FailPoint();
      this.points.set(name, point);
    }
    const count = point.timesEntered;
    point.mode = mode;
    point.data = data;
    return count;
  }

  /**
   * Returns the fail point's data when it is active, `applies` accepts the data and an
   * activation is available. Like mongod's `executeIf`, the predicate is checked before
   * `times`/`skip` counters are consumed, so non-matching commands don't use them up.
   */
  evaluate(name: string, applies: (data: Document) => boolean = () => true): Document | undefined {
    const point = this.points.get(name);
    if (!point || point.mode.kind === 'off') return undefined;
    if (!applies(point.data)) return undefined;
    return point.fire() ? point.data : undefined;
  }

  isActive(name: string): boolean {
    const point = this.points.get(name);
    return !!point && point.mode.kind !== 'off';
  }

  offAll(): void {
    for (const point of this.points.values()) point.mode = { kind: 'off' };
  }
}

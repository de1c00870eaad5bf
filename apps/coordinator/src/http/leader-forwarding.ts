import { ApiError, COMMAND_ID_HEADER, parseCommandId } from '@sync/contracts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Leadership } from '../leadership/leadership';

/** Marks a forwarded command, so it is never forwarded twice (no loop between replicas). */
export const FORWARDED_HEADER = 'x-sync-forwarded-by';

type BodyRequest = IncomingMessage & { body?: unknown; originalUrl?: string };

/**
 * On a follower, a command is relayed to the leader (same body, same X-Command-Id — generated
 * here when the client sent none, so a retried forward applies once) and the leader's answer
 * is returned as is. Progress (GET) is served by every replica itself. With an API token, the
 * forward carries this replica's token (the client's was checked here already).
 */
export function leaderForwarding(
  leadership: Leadership,
  selfId: string,
  timeoutMs: number,
  /** After the leader answered: this replica re-reads progress so it shows the effect too. */
  afterForward: () => Promise<unknown> = async () => undefined,
  /** This replica's API token (replicas share one): the leader requires it like any client. */
  apiToken?: string,
): (req: BodyRequest, res: ServerResponse, next: () => void) => Promise<void> {
  return async (req, res, next) => {
    if (req.method !== 'POST' || leadership.isLeader()) return next();
    const leader = leadership.leader();
    if (req.headers[FORWARDED_HEADER] !== undefined || !leader || leader.id === selfId) {
      throw new ApiError(
        'NotLeader',
        leader && leader.id !== selfId
          ? `${leader.id} leads the coordinator replicas (${leader.url}); retry there.`
          : 'No coordinator replica leads right now (an election or a Redis outage); retry shortly.',
      );
    }
    const commandId = parseCommandId(req.headers[COMMAND_ID_HEADER]) ?? `fwd-${randomUUID()}`;
    const target = `${new URL(leader.url).origin}${req.originalUrl ?? req.url ?? ''}`;
    let response: Response;
    try {
      response = await fetch(target, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [COMMAND_ID_HEADER]: commandId,
          [FORWARDED_HEADER]: selfId,
          ...(apiToken === undefined ? {} : { authorization: `Bearer ${apiToken}` }),
        },
        body: JSON.stringify(req.body ?? {}),
        signal: AbortSignal.timeout(timeoutMs + 15_000),
      });
    } catch {
      throw new ApiError(
        'NotLeader',
        `${leader.id} leads the coordinator replicas (${leader.url}) but did not answer the forwarded command; retry (X-Command-Id ${commandId} applies it once).`,
      );
    }
    const text = await response.text();
    await afterForward().catch(() => undefined);
    res.statusCode = response.status;
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(text);
  };
}

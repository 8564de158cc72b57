// @ts-self-types="./errors.d.ts"
import type { ErrorBody, Job } from "./openapi.js";

/**
 * EngramError is a request the server refused or failed. `message` is the server's own
 * message (the `error` of its JSON answer), `status` the HTTP status (0: no answer: the
 * server could not be reached or did not answer in time), `body` the whole error answer.
 */
export class EngramError extends Error {
  override name = "EngramError";
  constructor(
    readonly status: number,
    message: string,
    readonly method = "",
    readonly path = "",
    readonly body?: ErrorBody,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** 400: invalid input, a number outside its range or an unknown filter field; nothing was written. */
export class BadRequestError extends EngramError {
  override name = "BadRequestError";
}

/** 401: no key, or a key the server does not know (send one with `token`). */
export class UnauthorizedError extends EngramError {
  override name = "UnauthorizedError";
}

/** 403: the key lacks the right, or the session is outside its scope; or a foreign Origin. */
export class ForbiddenError extends EngramError {
  override name = "ForbiddenError";
}

/** 404: no memory, task, job, version or route by that name (the message names it). */
export class NotFoundError extends EngramError {
  override name = "NotFoundError";
}

/** 409: another admin job is running on the store. */
export class ConflictError extends EngramError {
  override name = "ConflictError";
}

/** 413: the request body is over the server's limit. */
export class PayloadTooLargeError extends EngramError {
  override name = "PayloadTooLargeError";
}

/** 507: the disk holding the store is full; the write failed and the next one succeeds once space is freed. */
export class InsufficientStorageError extends EngramError {
  override name = "InsufficientStorageError";
}

/** Status 0: the server could not be reached, or did not answer within the timeout. */
export class ConnectionError extends EngramError {
  override name = "ConnectionError";
}

/** An admin job that ended failed or cancelled; `job` is its last state (its `error` says why). */
export class JobFailedError extends EngramError {
  override name = "JobFailedError";
  constructor(readonly job: Job) {
    super(500, job.error || `job ${job.id} ${job.state}`, "GET", `/v1/jobs/${job.id}`);
  }
}

const byStatus: Record<number, typeof EngramError> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  507: InsufficientStorageError,
};

/** errorFor builds the error class for an HTTP status. */
export function errorFor(status: number, message: string, method: string, path: string, body?: ErrorBody): EngramError {
  const E = byStatus[status] ?? EngramError;
  return new E(status, message, method, path, body);
}

import type { Admission, AdmissionRefusal } from '../app/admission';
import { AppErrorWithHeaders } from './middleware';

/** How long a client refused by admission control is asked to wait: jobs finish in seconds to minutes. */
export const ADMISSION_RETRY_AFTER_SECONDS = 5;

/**
 * Nothing when the drive may queue another job (at once when its count is known, lib/app/admission.ts);
 * else a 429 `rate_limit_exceeded` with `Retry-After` (a generic answer of every endpoint, SPEC:
 * clients wait for it), its message from `say`.
 */
export function admit(admission: Admission | undefined, driveId: string, say: (refusal: AdmissionRefusal) => string): void | Promise<void> {
  if (!admission) return;
  const decided = admission.refusal(driveId);
  if (decided instanceof Promise) return decided.then((refusal) => refuseIf(refusal, say));
  refuseIf(decided, say);
}

function refuseIf(refusal: AdmissionRefusal | null, say: (refusal: AdmissionRefusal) => string): void {
  if (!refusal) return;
  throw new AppErrorWithHeaders('rate_limit_exceeded', say(refusal), { 'Retry-After': String(ADMISSION_RETRY_AFTER_SECONDS) });
}

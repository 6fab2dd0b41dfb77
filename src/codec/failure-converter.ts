// The failure converter of an encrypting worker and client: failure messages and stack traces move
// into an encoded attributes payload, which the payload codec encrypts (Temporal's own option for
// this, DefaultFailureConverter's encodeCommonAttributes). Loaded by path (`failureConverter` export)
// by Worker.create and bundled into the workflow code, so it imports nothing but @temporalio/common.
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });

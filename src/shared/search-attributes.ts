// Custom search attributes, registered by `npm run server`, `npm run cluster` and the test harness.
import { defineSearchAttributeKey } from '@temporalio/common';

export const SearchAttr = {
  domain: defineSearchAttributeKey('DocsDomain', 'KEYWORD'),
  projectId: defineSearchAttributeKey('DocsProjectId', 'KEYWORD'),
  jobId: defineSearchAttributeKey('DocsJobId', 'KEYWORD'),
  jobStatus: defineSearchAttributeKey('DocsJobStatus', 'KEYWORD'),
  prLink: defineSearchAttributeKey('DocsPrLink', 'KEYWORD'),
} as const;

/** name -> Temporal CLI type, for `temporal server start-dev --search-attribute name=Type`. */
export const SEARCH_ATTRIBUTE_REGISTRATION: Record<string, 'Keyword'> = Object.fromEntries(
  Object.values(SearchAttr).map((key) => [key.name, 'Keyword']),
);

// staticExport and bundleKeeper workflows. (Being written: issue 4.)
export {};

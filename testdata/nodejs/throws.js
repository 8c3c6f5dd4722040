// A Pulumi Node.js program that registers a resource and then fails with an
// exception of its own. The error is thrown from a later turn of the event
// loop rather than while the program loads: see the README's known limits
// for what Node.js 20.20 does with an error thrown while loading.
"use strict";
const pulumi = require("@pulumi/pulumi");

new pulumi.CustomResource("test:index:Thing", "kept", { name: "x" });
setImmediate(() => {
    throw new Error("the program's own failure");
});

// Package recordmsg holds the messages of one coordinator worker's actors
// that carry a store record itself: an observed split, leader, plan or
// assignment record (RecordsChanged, LeaderChanged, PlanChanged,
// AssignmentChanged). Those records are internal/protocol's types, which no
// code outside this module can name, so these messages are internal too;
// every other message is in actors/internal/wire, whose doc says who
// sends what to whom (the commands a user's actor sends are the public
// package messages) (docs/architecture.md, "Routing", is the table).
package recordmsg

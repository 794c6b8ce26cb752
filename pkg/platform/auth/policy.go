package auth

// Policies of the resultsync services.
var (
	ResultPolicy = Policy{
		"/fitness.v1.ResultService/RecordResult":  RoleOperator,
		"/fitness.v1.ResultService/CorrectResult": RoleOperator,
		"/fitness.v1.ResultService/DeleteResult":  RoleOperator,
		"/fitness.v1.ResultService/GetResult":     RoleViewer,
		"/fitness.v1.ResultService/ListResults":   RoleViewer,
	}
	OutboxPolicy = Policy{
		"/fitness.v1.OutboxService/ListOutboxEvents":   RoleViewer,
		"/fitness.v1.OutboxService/GetOutboxStats":     RoleViewer,
		"/fitness.v1.OutboxService/ReplayParkedEvents": RoleOperator,
	}
	ProjectionPolicy = Policy{
		"/fitness.v1.ProjectionService/GetProjectionStatus": RoleViewer,
		"/fitness.v1.ProjectionService/ListDeadLetters":     RoleViewer,
	}
	ReconcilePolicy = Policy{
		"/fitness.v1.ReconcileService/StartReconciliationRun": RoleOperator,
		"/fitness.v1.ReconcileService/GetReconciliationRun":   RoleViewer,
		"/fitness.v1.ReconcileService/ListReconciliationRuns": RoleViewer,
		"/fitness.v1.ReconcileService/WatchReconciliationRun": RoleViewer,
		"/fitness.v1.ReconcileService/ListDiscrepancies":      RoleViewer,
		"/fitness.v1.ReconcileService/ListCampaigns":          RoleViewer,
	}
	// RepairPolicy: reads viewer; planning, creating, verifying and
	// cancelling repairs operator; approvals and everything about rebuilds
	// admin (pkg/recovery/repairapi checks again, and refuses self-approval).
	RepairPolicy = Policy{
		"/fitness.v1.RepairService/CreateRepair":    RoleOperator,
		"/fitness.v1.RepairService/PlanRepair":      RoleOperator,
		"/fitness.v1.RepairService/ApproveRepair":   RoleAdmin,
		"/fitness.v1.RepairService/GetRepair":       RoleViewer,
		"/fitness.v1.RepairService/ListRepairs":     RoleViewer,
		"/fitness.v1.RepairService/ListRepairItems": RoleViewer,
		"/fitness.v1.RepairService/VerifyRepair":    RoleOperator,
		"/fitness.v1.RepairService/WatchRepair":     RoleViewer,
		"/fitness.v1.RepairService/CancelRepair":    RoleOperator,
		"/fitness.v1.RepairService/StartRebuild":    RoleAdmin,
		"/fitness.v1.RepairService/ApproveRebuild":  RoleAdmin,
		"/fitness.v1.RepairService/GetRebuild":      RoleViewer,
		"/fitness.v1.RepairService/ListRebuilds":    RoleViewer,
		"/fitness.v1.RepairService/WatchRebuild":    RoleViewer,
		"/fitness.v1.RepairService/CancelRebuild":   RoleAdmin,
	}
)
